package roles

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
)

// PeerUIDs lists the uids a listener accepts from the role client, beside
// the directory permissions that already keep others out (SO_PEERCRED is
// checked on every connection).
//
// When boxmaker runs as root and the role's user exists, that user's uid is
// the one; otherwise every role runs under the caller's uid, which is then
// the one. bxctl is the owner: root, or the uid that runs the daemons.
func PeerUIDs(client string) ([]uint32, error) {
	self := uint32(os.Getuid())
	if client == "bxctl" {
		return slices.Compact([]uint32{0, self}), nil
	}
	spec, ok := Lookup(client)
	if !ok || spec.User == "" {
		return nil, fmt.Errorf("no role %q runs a client", client)
	}
	if self != 0 {
		return []uint32{self}, nil
	}
	u, err := user.Lookup(spec.User)
	if err != nil {
		return []uint32{self}, nil // no role users: everything runs as root
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has uid %q", spec.User, u.Uid)
	}
	return []uint32{uint32(uid)}, nil
}

// UserName names a uid for people and audit records: its login name, or
// uid-<n> when it has none.
func UserName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return "uid-" + strconv.FormatUint(uint64(uid), 10)
}

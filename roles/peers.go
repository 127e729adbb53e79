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
// A listener running as its own role user (under systemd, or under up as
// root) accepts only the client role's user. Otherwise every role runs under
// one uid (up not as root, or a development run), and that uid is accepted
// too. The owner's command line (bxctl): root, and the uid that runs the daemons only when
// that is not a role user.
func PeerUIDs(client string) ([]uint32, error) {
	self := uint32(os.Getuid())
	if IsOwner(client) {
		// A listener running as its own role user does not accept that
		// user as the owner: brokerd's sandboxes run under brokerd's uid,
		// and must never pass for the owner on the admin socket.
		if runsAsRoleUser(self) {
			return []uint32{0}, nil
		}
		return slices.Compact([]uint32{0, self}), nil
	}
	spec, ok := Lookup(client)
	if !ok || spec.User == "" {
		return nil, fmt.Errorf("no role %q runs a client", client)
	}
	var uids []uint32
	if uid, ok := userUID(spec.User); ok {
		uids = append(uids, uid)
	}
	if !runsAsRoleUser(self) && !slices.Contains(uids, self) {
		uids = append(uids, self)
	}
	return uids, nil
}

// runsAsRoleUser reports whether uid is the user of one of the daemons.
func runsAsRoleUser(uid uint32) bool {
	for _, spec := range Table {
		if u, ok := userUID(spec.User); spec.Daemon && ok && u == uid {
			return true
		}
	}
	return false
}

func userUID(name string) (uint32, bool) {
	if name == "" {
		return 0, false
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, false
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	return uint32(uid), err == nil
}

// UserName names a uid for people and audit records: its login name, or
// uid-<n> when it has none.
func UserName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return "uid-" + strconv.FormatUint(uint64(uid), 10)
}

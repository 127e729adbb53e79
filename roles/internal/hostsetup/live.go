package hostsetup

import (
	"fmt"
	"slices"
	"strings"
	"syscall"

	"boxmaker/roles"
	"boxmaker/roles/internal/supervise"
)

// refuseLiveRoles reports an error naming the pids while any process of a
// role's uid lives: another up, the systemd units, or what a compromised
// role left behind to race root through the home.
func refuseLiveRoles(creds map[string]*syscall.Credential) error {
	var uids []uint32
	names := map[uint32]string{}
	for role, c := range creds {
		uids = append(uids, c.Uid)
		names[c.Uid] = role
	}
	slices.Sort(uids)
	procs, err := supervise.ProcessesOf(uids)
	if err != nil {
		return fmt.Errorf("up: cannot tell whether the roles' users run processes: %w", err)
	}
	var lines, users []string
	for _, uid := range uids {
		if len(procs[uid]) > 0 {
			user := userOf(names[uid])
			lines = append(lines, user+", "+supervise.DescribeProcesses([]uint32{uid}, procs)[0])
			users = append(users, user)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("up: refusing to touch the home while processes of the roles' users run:\n  %s\n"+
		"stop them first: another boxmaker up, the systemd units (systemctl stop boxmaker.target), or: pkill -KILL -U %s",
		strings.Join(lines, "\n  "), strings.Join(users, ","))
}

func userOf(role string) string {
	spec, _ := roles.Lookup(role)
	return spec.User
}

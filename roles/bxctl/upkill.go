package bxctl

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"boxmaker/roles/internal/supervise"

	"github.com/urfave/cli/v3"
)

// killUIDCommandName is up's hidden subcommand: the kill helper, which the
// supervisor runs under a role's uid to end every process of that uid.
const killUIDCommandName = "internal-kill-uid"

// killUIDCommand is run only by up as root, under a role's own user. It
// refuses root and any uid but --uid (supervise.KillOwnUID).
func killUIDCommand() *cli.Command {
	return &cli.Command{
		Name:   killUIDCommandName,
		Usage:  "internal: run by up under a role's user, ends every process of that user",
		Hidden: true,
		Flags:  []cli.Flag{&cli.IntFlag{Name: "uid", Required: true, Usage: "the uid this helper must run as"}},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usagef("%s takes no arguments", killUIDCommandName)
			}
			return supervise.KillOwnUID(cmd.Int("uid"))
		},
	}
}

// killHelper is the kill helper's command line for uid.
func killHelper(uid uint32) supervise.KillCommand {
	return supervise.KillCommand{
		Args: []string{"boxmaker", "up", killUIDCommandName, "--uid", strconv.FormatUint(uint64(uid), 10)},
		Env:  []string{rolePath},
	}
}

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
			user := userOfRole(names[uid])
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

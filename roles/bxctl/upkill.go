package bxctl

import (
	"context"
	"strconv"

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

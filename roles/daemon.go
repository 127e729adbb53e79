package roles

import (
	"context"

	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// DaemonCommand is a daemon role's command: `boxmaker <name> [--home DIR]
// [--config FILE]`, no arguments, serving until SIGINT or SIGTERM. run gets
// the installation's paths and a context the signals end.
func DaemonCommand(name, usage, description string, run func(ctx context.Context, paths config.Paths, cmd *cli.Command) error) *cli.Command {
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		Description: description,
		Flags:       HomeFlags(),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return Usagef("%s takes no arguments", name)
			}
			paths, err := config.Resolve(FlagOf(cmd, "home"), FlagOf(cmd, "config"))
			if err != nil {
				return err
			}
			ctx, stop := SignalContext(ctx)
			defer stop()
			return run(ctx, paths, cmd)
		},
	}
}

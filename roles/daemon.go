package roles

import (
	"context"

	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// HomeFlags are the flags of every command that works on an installation.
func HomeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "home", Usage: "boxmaker's home (default $BOXMAKER_HOME, else " + config.DefaultHome + ")"},
		&cli.StringFlag{Name: "config", Usage: "config.toml; grants/ and secrets/ sit beside it"},
	}
}

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
			paths, err := config.Resolve(cmd.String("home"), cmd.String("config"))
			if err != nil {
				return err
			}
			ctx, stop := SignalContext(ctx)
			defer stop()
			return run(ctx, paths, cmd)
		},
	}
}

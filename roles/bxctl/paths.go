package bxctl

import (
	"boxmaker/roles"
	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// homeFlags are the flags every command that reads the installation takes.
func homeFlags() []cli.Flag { return roles.HomeFlags() }

// pathsOf resolves the installation's paths from the command's flags.
func pathsOf(cmd *cli.Command) (config.Paths, error) {
	return config.Resolve(cmd.String("home"), cmd.String("config"))
}

// dirArg is the command's optional DIR argument, else def.
func dirArg(cmd *cli.Command, def string) (string, error) {
	switch cmd.Args().Len() {
	case 0:
		return def, nil
	case 1:
		return cmd.Args().First(), nil
	default:
		return "", usagef("%s takes at most one DIR", cmd.FullName())
	}
}

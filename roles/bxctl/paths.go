package bxctl

import (
	"slices"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// homeFlags are the flags every command that reads the installation takes.
func homeFlags() []cli.Flag { return roles.HomeFlags() }

// pathsOf resolves the installation's paths from the command's flags.
func pathsOf(cmd *cli.Command) (config.Paths, error) {
	return config.Resolve(setFlag(cmd, "home"), setFlag(cmd, "config"))
}

// setFlag is the value of the flag name from the innermost command on the
// line that was given it. A group and its commands each define --home, and
// urfave/cli reads a flag from the innermost command that defines it, set
// or not: `boxmaker sessions --home DIR show NAME` would lose DIR.
func setFlag(cmd *cli.Command, name string) string {
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			if slices.Contains(f.Names(), name) && f.IsSet() {
				v, _ := f.Get().(string)
				return v
			}
		}
	}
	return ""
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

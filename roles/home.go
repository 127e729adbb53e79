package roles

import (
	"slices"

	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// The flags that name an installation, which the root, the daemons and
// the owner's commands all take.

// HomeFlags are the flags of every command that works on an installation.
func HomeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "home", Usage: "boxmaker's home (default $BOXMAKER_HOME, else " + config.DefaultHome + ")"},
		&cli.StringFlag{Name: "config", Usage: "config.toml; grants/ and secrets/ sit beside it"},
	}
}

// FlagOf is the value of the string flag name from the innermost command on
// the line that was given it. The root, a group and its commands may each
// define --home, and urfave/cli reads a flag from the innermost command
// that defines it, set or not: `boxmaker --home DIR status` and `boxmaker
// sessions --home DIR show NAME` would lose DIR.
func FlagOf(cmd *cli.Command, name string) string {
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

package bxctl

import (
	"os"
	"path/filepath"
	"slices"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

// homeFlags are the flags every command that reads the installation takes.
func homeFlags() []cli.Flag { return roles.HomeFlags() }

// pathsOf resolves the installation's paths from the command's flags. With
// neither --home, --config nor BOXMAKER_HOME, on a machine where boxmaker is
// not installed but the current directory holds a development home
// (`make run` makes .state/), it says so instead of failing later on the
// production paths (DESIGN.md section 2).
func pathsOf(cmd *cli.Command) (config.Paths, error) {
	home, cfg := setFlag(cmd, "home"), setFlag(cmd, "config")
	p, err := config.Resolve(home, cfg)
	if err != nil || home != "" || cfg != "" || os.Getenv("BOXMAKER_HOME") != "" {
		return p, err
	}
	return p, devHomeHint(p)
}

// devHomeHint is the error for a command aimed at an uninstalled production
// home from a directory that holds a development one.
func devHomeHint(p config.Paths) error {
	if _, err := os.Stat(p.Config); err == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(devHome, "etc", "config.toml")); err != nil {
		return nil
	}
	return usagef("boxmaker is not installed in %s, but this directory has a development home: add --home %s (or export BOXMAKER_HOME=%s)",
		p.Home, devHome, devHome)
}

// devHome is where `make run` keeps its state, relative to the repository.
const devHome = ".state"

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

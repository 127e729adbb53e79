package bxctl

import (
	"os"
	"path/filepath"

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

// setFlag is roles.FlagOf: the flag from the innermost command given it.
func setFlag(cmd *cli.Command, name string) string { return roles.FlagOf(cmd, name) }

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

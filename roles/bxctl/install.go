package bxctl

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"boxmaker/roles/internal/hostsetup"
	"boxmaker/roles/internal/units"

	"github.com/urfave/cli/v3"
)

func installCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "install the daemons as hardened systemd units: users, groups, directories, role links, units",
		Description: "Reads [infer] upstream and [gateway] from config.toml (the units depend on them: run install\n" +
			"again after changing either), then creates what is missing and sets owners and modes on every run.\n" +
			"It never starts or restarts a unit: `systemctl restart boxmaker.target` does. See docs/deploy.md.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "systemd", Usage: "install for systemd (the only kind; required, so the command line says what it does)"},
			&cli.StringFlag{Name: "prefix", Usage: "put everything under `DIR`: DIR/bin, DIR/etc/boxmaker, DIR/etc/systemd/system, DIR/var/lib/boxmaker " +
				"(default: the binary in /usr/local/bin, the rest where the runtime layout says)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what install would do, as a shell script, and change nothing"},
			&cli.BoolFlag{Name: "nix-data", Usage: "print the unit data nix/module.nix reads (nix/units.json) and exit"},
		},
		Action: install,
	}
}

func install(_ context.Context, cmd *cli.Command) error {
	out := cmd.Root().Writer
	switch {
	case cmd.Args().Present():
		return usagef("install takes no arguments")
	case cmd.Bool("nix-data"):
		data, err := units.NixData()
		if err == nil {
			_, err = out.Write(data)
		}
		return err
	case !cmd.Bool("systemd"):
		return usagef("install: say --systemd (the only kind of install there is)")
	}
	layout := units.DefaultLayout()
	if prefix := cmd.String("prefix"); prefix != "" {
		abs, err := filepath.Abs(prefix)
		if err != nil {
			return err
		}
		layout = units.LayoutUnder(abs)
	}
	plan, err := hostsetup.PlanFor(layout)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if cmd.Bool("dry-run") {
		_, err := io.WriteString(out, units.Script(plan, exe))
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("install: creating users and setting owners needs root; --dry-run shows what it would do")
	}
	return hostsetup.Apply(plan, exe, cmd.Root().ErrWriter)
}

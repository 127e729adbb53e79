package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"
	"boxmaker/policy"
	"boxmaker/roles/internal/config"

	"github.com/urfave/cli/v3"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "write a working layout: config with comments, safe example grants, memory/core.md, the audit log's name",
		Flags: append(homeFlags(), &cli.StringFlag{
			Name: "audit-name", Usage: "the audit log's `NAME` (a-z, 0-9, dots, hyphens), kept in audit-name: its checkpoints' origin is NAME/boxmaker-audit " +
				"(default: the host's name and 8 random hex digits)",
		}),
		Action: initHome,
	}
}

// layoutFile is one file init writes; dir is relative to the home or to the
// config's directory.
type layoutFile struct {
	inEtc bool
	path  string
	mode  os.FileMode
	text  string
}

func initHome(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("init takes no arguments; use --home DIR")
	}
	paths, err := config.Resolve(setFlag(cmd, "home"), setFlag(cmd, "config")) // init makes a home: no hint about another
	if err != nil {
		return err
	}
	etc := filepath.Dir(paths.Config)
	name := cmd.String("audit-name")
	if name == "" {
		name = audit.NewName()
	}
	if !audit.ValidName(name) {
		return usagef("init: --audit-name %q: letters a-z, digits, dots and hyphens, starting with a letter or digit, at most 64", name)
	}
	var existing []string
	for _, f := range append(layout(), layoutFile{path: audit.NameFile}) {
		if _, err := os.Lstat(f.where(paths.Home, etc)); !errors.Is(err, fs.ErrNotExist) {
			existing = append(existing, f.where(paths.Home, etc))
		}
	}
	if len(existing) > 0 {
		return fmt.Errorf("init: refusing to overwrite what exists:\n  %s", strings.Join(existing, "\n  "))
	}
	// The directories above the home that init makes are the role users'
	// way in: up as root runs each daemon under its own user, which must
	// pass through them. The home itself up prepares.
	if err := os.MkdirAll(filepath.Dir(paths.Home), 0o755); err != nil {
		return err
	}
	for _, dir := range []string{paths.Home, paths.Grants, paths.Secrets} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	for _, f := range append(layout(), layoutFile{false, audit.NameFile, 0o644, name + "\n"}) {
		if err := f.write(paths.Home, etc); err != nil {
			return err
		}
	}
	if _, bad, err := policy.LoadDir(paths.Grants); err != nil || len(bad) > 0 {
		return fmt.Errorf("init wrote grants that do not check: %v %v", err, bad)
	}
	out := cmd.Root().Writer
	fmt.Fprintf(out, "initialised %s (config %s)\n", paths.Home, paths.Config)
	if blocked := untraversable(paths.Home); blocked != "" {
		fmt.Fprintf(out, "warning: %s is not open to other users (no o+x): boxmaker up as root runs each daemon under its own user, which must pass through it to reach %s; chmod o+x %s, or choose a home elsewhere\n",
			blocked, paths.Home, blocked)
	}
	fmt.Fprintln(out, "next: boxmaker up --home "+paths.Home+" --scripted-model   (or set [infer] upstream)")
	return nil
}

func (f layoutFile) where(home, etc string) string {
	if f.inEtc {
		return filepath.Join(etc, f.path)
	}
	return filepath.Join(home, f.path)
}

func (f layoutFile) write(home, etc string) error {
	path := f.where(home, etc)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
	if err != nil {
		return err
	}
	if _, err := file.WriteString(f.text); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// layout is everything init writes. The grants are safe by default: public
// fetches ask, notes are read and searched (memory/notes only) without
// asking and written only on approval, and a few harmless shell commands
// run at once. A session that has read untrusted text may not write notes
// and must ask before shell (when_untrusted, DESIGN.md section 12).
func layout() []layoutFile {
	return []layoutFile{
		{true, "config.toml", 0o644, configTemplate},
		{true, "grants/notes-read.toml", 0o644, grantNotesRead},
		{true, "grants/notes-search.toml", 0o644, grantNotesSearch},
		{true, "grants/notes-write.toml", 0o644, grantNotesWrite},
		{true, "grants/shell.toml", 0o644, grantShell},
		{true, "grants/fetch-public.toml", 0o644, grantFetchPublic},
		{false, "memory/core.md", 0o644, coreMemory},
		{false, "memory/notes/welcome.md", 0o600, welcomeNote},
	}
}

// untraversable is the nearest directory above home that other users may
// not pass through, or "".
func untraversable(home string) string {
	abs, err := filepath.Abs(home)
	if err != nil {
		return ""
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return dir
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}

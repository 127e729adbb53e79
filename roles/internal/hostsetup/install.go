package hostsetup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// planFor reads what the units depend on from the layout's config.toml
// and, for the secrets brokerd's unit loads, its grants.
// BOXMAKER_UPSTREAM is refused: the units never see the installer's
// environment, so inferproxy would dial one upstream and be allowed another.
func planFor(layout units.Layout) (units.Plan, error) {
	if os.Getenv("BOXMAKER_UPSTREAM") != "" {
		return units.Plan{}, fmt.Errorf("install: BOXMAKER_UPSTREAM is set, but the units never see it; "+
			"write the upstream as [infer] upstream in %s and unset it", layout.Config())
	}
	cfg, err := config.Load(layout.Config())
	if err != nil {
		return units.Plan{}, err
	}
	grantsDir := filepath.Join(layout.Etc, "grants")
	var notes []string
	token, grants, bad, err := secretNames(layout.Config(), grantsDir)
	if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 {
		// A dry run by the owner: the grants are brokerd's and root's.
		notes = append(notes, "cannot read "+grantsDir+" (not root): brokerd's unit below loads none of the secrets the grants name")
	} else if err != nil {
		return units.Plan{}, err
	}
	if bad > 0 {
		notes = append(notes, fmt.Sprintf("%d grant file(s) in %s do not parse (boxmaker grants check): brokerd ignores them, "+
			"and a secret they name is not loaded until they are fixed and install runs again", bad, grantsDir))
	}
	site := units.NewSite(layout, cfg.Infer.Upstream, token)
	site.GrantSecrets = grants
	plan, err := units.NewPlan(site)
	if _, statErr := os.Stat(layout.Config()); errors.Is(statErr, fs.ErrNotExist) {
		plan.Notes = append(plan.Notes, layout.Config()+" does not exist yet: write it (docs/configuration.md) and run install again")
	}
	plan.Notes = append(plan.Notes, notes...)
	for _, u := range plan.Secrets {
		if _, statErr := os.Lstat(filepath.Join(layout.SecretsDir(), u.Name)); errors.Is(statErr, fs.ErrNotExist) {
			plan.Notes = append(plan.Notes, fmt.Sprintf("secret %s (read by %s) is not in %s yet: the unit starts without it and "+
				"what needs it fails; put it there and restart the unit", u.Name, strings.Join(u.Roles, " and "), layout.SecretsDir()))
		}
	}
	return plan, err
}

// system is what install changes beyond files: the user database and
// systemd. The tests replace it, so that a real run into a temporary
// prefix creates no accounts.
type system interface {
	lookupUser(name string) (int, error)
	lookupGroup(name string) (int, error)
	inGroup(userName, group string) (bool, error)
	run(args ...string) error
	systemdRunning() bool
}

// applyPlan carries the plan out. Each step does only what is missing or
// different, so a second run changes nothing.
func applyPlan(p units.Plan, source string, sys system, log io.Writer) error {
	for _, n := range p.Notes {
		fmt.Fprintln(log, "install: note:", n)
	}
	for _, step := range []func() error{
		func() error { return ensureAccounts(p, sys, log) },
		func() error { return ensureBinary(p, source, log) },
		func() error { return ensureLinks(p, log) },
		func() error { return ensureHome(p, sys) },
		func() error { return ensureUnits(p, log) },
		func() error { return enableUnits(p, sys, log) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	fmt.Fprintln(log, "install: done; start or restart the daemons with: systemctl restart", units.Target)
	return nil
}

func ensureAccounts(p units.Plan, sys system, log io.Writer) error {
	var todo [][]string
	for _, u := range p.Users {
		if _, err := sys.lookupUser(u.Name); err != nil {
			todo = append(todo, units.UseraddArgs(u.Name))
		}
	}
	if err := runAll(sys, log, todo); err != nil {
		return err
	}
	todo = nil
	for _, g := range p.Groups {
		if _, err := sys.lookupGroup(g.Name); err != nil {
			if err := runAll(sys, log, [][]string{units.GroupaddArgs(g.Name)}); err != nil {
				return err
			}
		}
		for _, m := range g.Members {
			if in, err := sys.inGroup(m, g.Name); err != nil || !in {
				todo = append(todo, units.UsermodArgs(m, g.Name))
			}
		}
	}
	return runAll(sys, log, todo)
}

func runAll(sys system, log io.Writer, cmds [][]string) error {
	for _, c := range cmds {
		fmt.Fprintln(log, "install:", strings.Join(c, " "))
		if err := sys.run(c...); err != nil {
			return fmt.Errorf("install: %s: %w", strings.Join(c, " "), err)
		}
	}
	return nil
}

// ensureBinary copies the running binary into place, unless it runs from
// there or the same bytes are there already. The copy is renamed over the old one, so running daemons keep
// theirs until they restart.
func ensureBinary(p units.Plan, source string, log io.Writer) error {
	if err := os.MkdirAll(p.Site.Bin, 0o755); err != nil {
		return err
	}
	src, err := os.Stat(source)
	if err != nil {
		return err
	}
	if dst, err := os.Stat(p.Binary()); err == nil && os.SameFile(src, dst) {
		return nil
	}
	data, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(p.Binary()); err == nil && bytes.Equal(old, data) {
		return nil
	}
	fmt.Fprintf(log, "install: install -m 0755 %s %s\n", source, p.Binary())
	return replaceFile(p.Binary(), data, 0o755)
}

// replaceFile writes data beside path and renames it over path, durably
// (atomicfile.Write).
func replaceFile(path string, data []byte, mode fs.FileMode) error {
	return atomicfile.Write(path, data, mode)
}

func ensureLinks(p units.Plan, log io.Writer) error {
	for _, l := range p.Links {
		if target, err := os.Readlink(l.Path); err == nil && target == l.Target {
			continue
		}
		fmt.Fprintf(log, "install: ln -sfn %s %s\n", l.Target, l.Path)
		tmp := l.Path + ".install"
		os.Remove(tmp)
		if err := os.Symlink(l.Target, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, l.Path); err != nil {
			return err
		}
	}
	return nil
}

// ensureHome makes the plan's directories, then its files (memory/core.md)
// the way up does: by descriptor beneath the home, never through a link,
// and a file only if it is new or already its owner's (ensurePlanFiles).
func ensureHome(p units.Plan, sys system) error {
	dirs := p
	dirs.Dirs = slices.DeleteFunc(slices.Clone(p.Dirs), func(d units.Dir) bool { return d.File })
	if err := ensureDirs(dirs, sys); err != nil {
		return err
	}
	return ensurePlanFiles(p.Site.Home, p, sys)
}

// ensureDirs makes each directory and sets its owner and mode.
//
// WARNING: core.md lies in memory/, which brokerd owns, so brokerd could put
// a symlink or a hard link to another file there for root to chown. The
// owner and mode are therefore set through a descriptor opened with
// O_NOFOLLOW, on a regular file with one link only;
// TestInstallRefusesALinkedCoreMemory proves it.
func ensureDirs(p units.Plan, sys system) error {
	for _, d := range p.Dirs {
		uid, err := sys.lookupUser(d.Owner)
		if err != nil {
			return fmt.Errorf("install: owner of %s: %w", d.Path, err)
		}
		gid, err := sys.lookupGroup(d.Group)
		if err != nil {
			return fmt.Errorf("install: group of %s: %w", d.Path, err)
		}
		if err := create(d); err != nil {
			return fmt.Errorf("install: %w", err)
		}
		if err := setOwnerAndMode(d, uid, gid); err != nil {
			return fmt.Errorf("install: %s: %w", d.Path, err)
		}
	}
	return nil
}

func create(d units.Dir) error {
	if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
		return err
	}
	var err error
	if d.File {
		var f *os.File
		if f, err = os.OpenFile(d.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600); err == nil {
			err = f.Close()
		}
	} else {
		err = os.Mkdir(d.Path, 0o700)
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

func setOwnerAndMode(d units.Dir, uid, gid int) error {
	flags := os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	if !d.File {
		flags |= syscall.O_DIRECTORY
	}
	f, err := os.OpenFile(d.Path, flags, 0)
	if err != nil {
		return fmt.Errorf("refusing to set its owner: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); d.File && (!fi.Mode().IsRegular() || !ok || st.Nlink != 1) {
		return errors.New("refusing to set its owner: not a regular file with one link")
	}
	if err := f.Chown(uid, gid); err != nil {
		return err
	}
	return f.Chmod(d.Mode.FileMode())
}

func ensureUnits(p units.Plan, log io.Writer) error {
	if err := os.MkdirAll(p.Site.Units, 0o755); err != nil {
		return err
	}
	for _, u := range p.Units {
		if old, err := os.ReadFile(u.Path); err == nil && bytes.Equal(old, []byte(u.Text)) {
			continue
		}
		fmt.Fprintln(log, "install: write", u.Path)
		if err := replaceFile(u.Path, []byte(u.Text), 0o644); err != nil {
			return err
		}
	}
	for _, path := range p.Stale {
		if err := os.Remove(path); err == nil {
			fmt.Fprintln(log, "install: rm -f", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func enableUnits(p units.Plan, sys system, log io.Writer) error {
	switch {
	case !p.Enable:
		fmt.Fprintf(log, "install: the units are in %s, outside systemd's own directory: systemd was not told\n", p.Site.Units)
		return nil
	case !sys.systemdRunning():
		fmt.Fprintln(log, "install: systemd is not running here: run `systemctl daemon-reload && systemctl enable boxmaker.target` where it is")
		return nil
	}
	return runAll(sys, log, units.SystemctlSteps())
}

// hostSystem is the real user database and systemd.
type hostSystem struct{ log io.Writer }

func (hostSystem) lookupUser(name string) (int, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(u.Uid)
}

func (hostSystem) lookupGroup(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

func (hostSystem) inGroup(userName, group string) (bool, error) {
	u, err := user.Lookup(userName)
	if err != nil {
		return false, err
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return false, err
	}
	ids, err := u.GroupIds()
	return slices.Contains(ids, g.Gid), err
}

func (h hostSystem) run(args ...string) error {
	c := exec.Command(args[0], args[1:]...)
	c.Stdout, c.Stderr = h.log, h.log
	return c.Run()
}

// systemdRunning is sd_booted(3): systemd is PID 1 when this exists.
func (hostSystem) systemdRunning() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

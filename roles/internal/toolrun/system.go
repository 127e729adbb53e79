package toolrun

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// System is what a tool that runs /bin/sh (shell) gets besides /usr and
// the host's /bin, /lib, /lib64 and /sbin. A NixOS host keeps almost
// nothing there: /bin/sh and every command live in /nix/store, so the
// owner names such directories in [sandbox] system_paths and the commands'
// PATH in [sandbox] shell_path. bwrap mounts Paths read-only at the same
// place (roles/internal/sandbox) and toolkit's Landlock rules let the tool
// read and execute in them and nowhere else of the host's (confine.go):
// both read this one list, so the two fences cannot differ.
type System struct {
	Paths     []string `json:"paths"`      // host directories, read-only at the same path
	ShellPath string   `json:"shell_path"` // the PATH the commands get
}

// Check reports why s cannot go with any job, for config to say at start
// what a shell call would otherwise fail on.
func (s System) Check() error { return s.validate(nil) }

// validate reports why s cannot go with a job mounting mounts.
func (s System) validate(mounts []Mount) error {
	seen := map[string]bool{}
	for _, p := range s.Paths {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return fmt.Errorf("system path %q must be a clean absolute path below /", p)
		}
		if seen[p] {
			return fmt.Errorf("system path %q appears twice", p)
		}
		seen[p] = true
		for _, r := range slices.Concat(reserved, systemPaths) {
			if within(p, r) || within(r, p) {
				return fmt.Errorf("system path %q overlaps the sandbox's own %s", p, r)
			}
		}
		for _, m := range mounts {
			if within(m.Path, p) || within(p, m.Path) {
				return fmt.Errorf("mount %q overlaps system path %q", m.Path, p)
			}
		}
	}
	if s.ShellPath == "" {
		return errors.New("the shell path is empty")
	}
	for _, dir := range strings.Split(s.ShellPath, ":") {
		if !path.IsAbs(dir) || path.Clean(dir) != dir || strings.ContainsFunc(dir, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("shell path entry %q must be a clean absolute path", dir)
		}
	}
	return nil
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

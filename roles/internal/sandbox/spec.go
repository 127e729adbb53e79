package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"boxmaker/roles/internal/toolrun"
)

// sandboxID is the uid and gid the tool runs as inside its user namespace
// ("nobody"); outside, its files belong to the user that started bwrap.
const sandboxID = "65534"

// sandboxPath is the only environment variable the tool gets.
const sandboxPath = "/usr/bin:/bin"

// firstMountFD is the descriptor of the first granted path handed to bwrap;
// fd 3 is the egress connection (toolrun.EgressFD), or closed.
const firstMountFD = toolrun.EgressFD + 1

// Mount is one granted host path and where the tool sees it.
type Mount struct {
	Host     string // the real path, from Resolve: no symlink in any component
	Path     string // absolute, inside the sandbox
	Writable bool
}

// Spec is everything one run needs.
type Spec struct {
	Bwrap       string        // bubblewrap, absolute
	Executable  string        // the boxmaker executable, absolute; mounted at /boxmaker
	Mounts      []Mount       // the granted paths and nothing else
	System      bool          // /usr and the merged-usr links: only shell needs them
	Egress      *os.File      // becomes fd 3; nil unless the tool needs the web; the caller closes it
	WallTime    time.Duration // the run is killed when it passes this
	OutputBytes int64         // stdout beyond this kills the run
	Job         toolrun.Job   // sent on stdin; must agree with the fields above

	// RunAs, when set, is the user bwrap runs as; nil runs it as the
	// caller. It matters only when the caller is root: the kernel exempts
	// root's processes from RLIMIT_NPROC, so a sandbox started by root has
	// no process limit unless it runs as another user.
	RunAs *syscall.Credential
}

// JobMounts is the Job's view of mounts, for building a Spec.Job that agrees.
func JobMounts(mounts []Mount) []toolrun.Mount {
	out := make([]toolrun.Mount, len(mounts))
	for i, m := range mounts {
		out[i] = toolrun.Mount{Path: m.Path, Writable: m.Writable}
	}
	return out
}

// validate reports why s cannot run. The Job is checked against the Spec
// because toolkit confines itself by the Job and bwrap mounts by the Spec:
// if they disagreed, the inner and outer fences would differ.
func (s Spec) validate() error {
	if !filepath.IsAbs(s.Bwrap) || !filepath.IsAbs(s.Executable) {
		return errors.New("sandbox: bwrap and the executable need absolute paths")
	}
	if s.WallTime <= 0 || s.OutputBytes <= 0 {
		return errors.New("sandbox: wall time and output bytes must be positive")
	}
	if err := s.Job.Validate(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	needs := toolrun.NeedsOf(s.Job.Tool)
	switch {
	case s.System != needs.System:
		return fmt.Errorf("sandbox: %s needs system=%v", s.Job.Tool, needs.System)
	case (s.Egress != nil) != s.Job.Egress:
		return errors.New("sandbox: an egress file is given exactly when the job has egress")
	case s.Job.Limits.OutputBytes > s.OutputBytes:
		return errors.New("sandbox: the job's output limit is over the sandbox's")
	case !slices.Equal(JobMounts(s.Mounts), s.Job.Mounts):
		return errors.New("sandbox: the job's mounts differ from the sandbox's (use JobMounts)")
	}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Host) || filepath.Clean(m.Host) != m.Host {
			return fmt.Errorf("sandbox: host path %q is not clean and absolute", m.Host)
		}
	}
	return nil
}

// args is bwrap's argument vector. Granted paths come in as descriptors
// firstMountFD, firstMountFD+1, … in the order of mounts, which the caller
// has sorted so that a parent is mounted before what lies below it.
//
// WARNING: order matters to bwrap: "--remount-ro /" must follow every mount
// that creates a mount point in the root, and parents must precede children.
// TestSandboxEscapes (roles/toolkit) proves the root and grants hold.
func (s Spec) args(mounts []Mount, system []string) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--uid", sandboxID, "--gid", sandboxID,
		"--cap-drop", "ALL", "--die-with-parent", "--new-session",
		"--clearenv", "--setenv", "PATH", sandboxPath,
		"--ro-bind", s.Executable, toolrun.ExecutablePath,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(s.Job.Limits.MemoryBytes, 10), "--tmpfs", "/tmp",
	}
	a = append(a, system...)
	for i, m := range mounts {
		op := "--ro-bind-fd"
		if m.Writable {
			op = "--bind-fd"
		}
		a = append(a, op, strconv.Itoa(firstMountFD+i), m.Path)
	}
	return append(a, "--remount-ro", "/", "--chdir", "/", "--",
		toolrun.ExecutablePath, "toolkit", s.Job.Tool)
}

// sortedMounts orders mounts by their path's components, so that a
// directory comes before anything mounted below it.
func sortedMounts(mounts []Mount) []Mount {
	out := slices.Clone(mounts)
	slices.SortFunc(out, func(a, b Mount) int {
		return slices.Compare(strings.Split(a.Path, "/"), strings.Split(b.Path, "/"))
	})
	return out
}

// systemArgs mounts /usr read-only and recreates the host's /bin, /lib,
// /lib64 and /sbin: as symlinks where the host has merged /usr (Debian 12
// does), as read-only binds where it has real directories.
func systemArgs() ([]string, error) {
	a := []string{"--ro-bind", "/usr", "/usr"}
	for _, dir := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return nil, err
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(dir)
			if err != nil {
				return nil, err
			}
			a = append(a, "--symlink", target, dir)
		case fi.IsDir():
			a = append(a, "--ro-bind", dir, dir)
		}
	}
	return a, nil
}

// systemPathArgs mounts the job's system paths ([sandbox] system_paths,
// /nix/store on NixOS) read-only where they are on the host. The Job
// carries them so that toolkit's Landlock rules name the same list; the
// Job's validation keeps them clear of the sandbox's own paths and of the
// granted ones, which are mounted after them.
func systemPathArgs(sys *toolrun.System) []string {
	var a []string
	if sys != nil {
		for _, p := range sys.Paths {
			a = append(a, "--ro-bind", p, p)
		}
	}
	return a
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/roles/internal/nofollow"

	"golang.org/x/sys/unix"
)

// Resolve returns the real path of path, following every symlink, provided
// that path exists and its real path is root's real path or lies below it.
// brokerd calls it on each granted path before mounting, with root the
// grant's own entry (for file_read) or memory/ (for notes), so that a
// symlink planted as a note cannot make bwrap mount /etc.
func Resolve(root, path string) (string, error) {
	if !filepath.IsAbs(root) || !filepath.IsAbs(path) {
		return "", fmt.Errorf("resolve: %q and %q must be absolute", root, path)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	if !within(realRoot, real) {
		return "", fmt.Errorf("resolve: %s leads to %s, outside %s", path, real, realRoot)
	}
	return real, nil
}

// within reports whether path is dir or lies below it, by whole components.
func within(dir, path string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// openMounts opens each host path for bwrap's --bind-fd. openat2 with
// RESOLVE_NO_SYMLINKS refuses a path that has a symlink anywhere in it, so
// a component swapped for a symlink after Resolve (by a concurrent tool
// writing notes) fails here instead of being followed by bwrap. The files
// are O_PATH: bwrap can mount them, and closes them before the tool runs.
// nofollow keeps this working where systemd's RestrictSUIDSGID= makes
// openat2 itself fail with ENOSYS (brokerd's unit).
func openMounts(mounts []Mount) ([]*os.File, error) {
	var files []*os.File
	for _, m := range mounts {
		fd, err := nofollow.Open(unix.AT_FDCWD, m.Host, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			closeAll(files)
			if errors.Is(err, unix.ELOOP) {
				return nil, fmt.Errorf("sandbox: %s has a symlink in it; mount only paths from Resolve", m.Host)
			}
			return nil, fmt.Errorf("sandbox: open %s: %w", m.Host, err)
		}
		files = append(files, os.NewFile(uintptr(fd), m.Host))
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

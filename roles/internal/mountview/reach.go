package mountview

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Blocked returns the directories that keep one of creds from reaching one
// of paths: for each path, the first directory on its way (as written, and
// with its links resolved) that the credential may not search, by owner,
// group and mode (ACLs are not read: at worst a view is made where one was
// not needed). It returns none when every role can reach every path.
func Blocked(paths []string, creds []*syscall.Credential) ([]string, error) {
	var out []string
	for _, p := range paths {
		forms, err := forms(p)
		if err != nil {
			return nil, err
		}
		for _, f := range forms {
			dir, err := firstBlocked(f, creds)
			if err != nil {
				return nil, err
			}
			if dir != "" && !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
	}
	return topmost(out), nil
}

// forms is path as written (absolute, cleaned) and with its links resolved.
func forms(path string) ([]string, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	path = filepath.Clean(path)
	if real == path {
		return []string{path}, nil
	}
	return []string{path, real}, nil
}

// firstBlocked is the first directory above path that one of creds may not
// search, or "".
func firstBlocked(path string, creds []*syscall.Credential) (string, error) {
	dir := "/"
	for _, name := range strings.Split(strings.Trim(filepath.Dir(path), "/"), "/") {
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			return "", err
		}
		for _, c := range creds {
			if !searchable(&st, c) {
				return dir, nil
			}
		}
		dir = filepath.Join(dir, name)
	}
	return "", nil
}

// searchable reports whether c may search a directory with st's owner,
// group and mode.
func searchable(st *syscall.Stat_t, c *syscall.Credential) bool {
	switch {
	case c.Uid == 0:
		return true
	case c.Uid == st.Uid:
		return st.Mode&0o100 != 0
	case c.Gid == st.Gid || slices.Contains(c.Groups, st.Gid):
		return st.Mode&0o010 != 0
	default:
		return st.Mode&0o001 != 0
	}
}

// topmost drops each directory below another in dirs: the tmpfs over the
// upper one holds the lower one's paths already.
func topmost(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if !slices.ContainsFunc(dirs, func(o string) bool { return o != d && within(d, o) }) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

// keep is what the view binds: each form of paths, but those below another.
func keep(paths []string) ([]string, error) {
	var all []string
	for _, p := range paths {
		f, err := forms(p)
		if err != nil {
			return nil, err
		}
		all = append(all, f...)
	}
	var out []string
	for _, p := range all {
		if !slices.Contains(out, p) && !slices.ContainsFunc(all, func(o string) bool { return o != p && within(p, o) }) {
			out = append(out, p)
		}
	}
	return out, nil
}

package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"boxmaker/wire"
)

const notesPathRule = "notes paths are relative to memory/ and stay inside it"

// components splits p into its names after resolving "." and ".." and
// repeated slashes lexically. ok is false when a ".." climbs above the root:
// such a path leaves its root and matches nothing.
func components(p string) (names []string, ok bool) {
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(names) == 0 {
				return nil, false
			}
			names = names[:len(names)-1]
		default:
			names = append(names, c)
		}
	}
	return names, true
}

// CleanPath returns the path a file tool works on: p cleaned lexically
// ("notes/../secret/x" is "secret/x"), absolute for AbsolutePathsDimension
// and relative to memory/ for MemoryPathsDimension. A path in the wrong
// form, one that leaves its root, names the root itself or holds a NUL is
// an error, and matches no grant. The runner opens the cleaned path, so
// that what was matched is what is opened.
func CleanPath(dim wire.Dimension, p string) (string, error) {
	names, err := pathComponents(dim, p)
	if err != nil {
		return "", err
	}
	return joinPath(dim, names), nil
}

func pathComponents(dim wire.Dimension, p string) ([]string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, fmt.Errorf("path %s holds a NUL byte", short(p))
	}
	absolute := strings.HasPrefix(p, "/")
	switch {
	case dim == wire.AbsolutePathsDimension && !absolute:
		return nil, fmt.Errorf("path %s is not absolute", short(p))
	case dim == wire.MemoryPathsDimension && absolute:
		return nil, fmt.Errorf("path %s is absolute; %s", short(p), notesPathRule)
	case dim != wire.AbsolutePathsDimension && dim != wire.MemoryPathsDimension:
		return nil, errors.New("the tool takes no path")
	}
	names, ok := components(p)
	switch {
	case !ok:
		return nil, fmt.Errorf("path %s leaves its root", short(p))
	case len(names) == 0:
		return nil, fmt.Errorf("path %s names the root itself, not a file or directory inside it", short(p))
	}
	return names, nil
}

// pathEntry is one checked entry of [constraints] paths.
type pathEntry struct {
	raw   string
	names []string
}

// parsePathEntry checks a paths entry for tool: it must be in the form the
// tool's paths take, stay inside the root, name something below the root,
// and already be clean, so that the owner reads what is matched.
func parsePathEntry(tool wire.Tool, s string) (pathEntry, error) {
	_, inside := components(s)
	absolute := strings.HasPrefix(s, "/")
	switch {
	case tool.Dimension == wire.MemoryPathsDimension && (absolute || !inside):
		return pathEntry{}, fmt.Errorf("path %q: %s", s, notesPathRule)
	case tool.Dimension == wire.AbsolutePathsDimension && !absolute:
		return pathEntry{}, fmt.Errorf("path %q: %s paths are absolute", s, tool.Name)
	case tool.WritesPaths() && coversCore(s):
		return pathEntry{}, fmt.Errorf("path %q would let %s change memory/core.md, the system prompt of every session, "+
			"which no grant may mount writable; grant the directory your notes live in, as \"notes\"", s, tool.Name)
	}
	names, err := pathComponents(tool.Dimension, s)
	if err != nil {
		return pathEntry{}, err
	}
	if clean := joinPath(tool.Dimension, names); clean != s {
		return pathEntry{}, fmt.Errorf("path %q is not in clean form; write %q", s, clean)
	}
	return pathEntry{raw: s, names: names}, nil
}

// coreFile is memory/core.md, the system prompt of every session.
const coreFile = "core.md"

// coversCore reports whether memory paths entry s, once cleaned, is the root
// of memory/ (which holds core.md), core.md itself, or lies below a
// core.md. Case is ignored, so that a case-insensitive file system cannot
// turn "Core.md" into core.md.
func coversCore(s string) bool {
	names, inside := components(s)
	return inside && (len(names) == 0 || strings.EqualFold(names[0], coreFile))
}

func joinPath(dim wire.Dimension, names []string) string {
	if dim == wire.AbsolutePathsDimension {
		return "/" + strings.Join(names, "/")
	}
	return strings.Join(names, "/")
}

// scopeMatcher is a ScopedPaths tool's (notes_search): the call names no
// path, so it is inside every grant for the tool; the grant's paths say
// what the sandbox mounts, and so what the call can see.
type scopeMatcher struct{ paths pathsMatcher }

func (m scopeMatcher) match(*subject) (bool, string) {
	quoted := make([]string, len(m.paths.entries))
	for i, e := range m.paths.entries {
		quoted[i] = fmt.Sprintf("%q", e.raw)
	}
	return true, "the call names no path; it sees only paths " + strings.Join(quoted, ", ")
}

// pathsMatcher matches file and notes paths against a grant's paths.
type pathsMatcher struct {
	dim     wire.Dimension
	entries []pathEntry
}

// match reports whether an entry equals the cleaned path or one of its
// parent directories, compared by whole names: notes covers notes/a.md,
// never notes-old/a.md.
func (m pathsMatcher) match(s *subject) (bool, string) {
	names, err := s.components(m.dim)
	if err != nil {
		return false, err.Error()
	}
	clean := joinPath(m.dim, names)
	for _, e := range m.entries {
		if len(e.names) <= len(names) && slices.Equal(e.names, names[:len(e.names)]) {
			return true, fmt.Sprintf("path %s is inside paths entry %q", short(clean), e.raw)
		}
	}
	return false, fmt.Sprintf("no paths entry holds %s", short(clean))
}

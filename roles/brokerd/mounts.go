package brokerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/policy"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/wire"
)

// memoryMount is where memory/ appears inside a sandbox.
const memoryMount = "/memory"

// mountsFor returns what call's sandbox may see, as its tool's descriptor
// says (wire.MountKind): nothing, the grant entry that covers the
// requested path, the one note read, the grant's notes paths, or the grant
// entry written. Each host path must be its own real path (no symlink
// anywhere in it, so nothing a sandbox planted can redirect a grant), and
// none may be or hold boxmaker's own state (see refuseState).
func mountsFor(g policy.Grant, call wire.Call, memory string, state []string) ([]sandbox.Mount, error) {
	tool, ok := call.Tool()
	if !ok || !call.Decoded() {
		return nil, fmt.Errorf("%s: no tool or arguments to mount for", call.Name())
	}
	kind := tool.Sandbox.Mount
	mounts, err := mountsOf(kind, g, call.Args().Subject(), memory)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		if err := refuseState(m.Host, state); err != nil {
			return nil, err
		}
	}
	if kind == wire.MountCoveringEntry {
		return mounts, refuseNotes(tool.Name, mounts, memory)
	}
	return mounts, nil
}

// refuseNotes refuses a mount of host paths (file_read's) that is, holds
// or lies in memory/: notes carry labels (who wrote them, at what class)
// that only the notes tools read, and a file_read grant would read them
// under its own.
func refuseNotes(tool string, mounts []sandbox.Mount, memory string) error {
	mem, err := filepath.EvalSymlinks(memory)
	if err != nil {
		mem = memory
	}
	for _, m := range mounts {
		if within(mem, m.Host) || within(m.Host, mem) {
			return fmt.Errorf("refusing to mount %s for %s: it is or holds the notes (%s); grant notes_read instead", m.Host, tool, mem)
		}
	}
	return nil
}

// refuseState refuses a mount that is, holds, or lies inside one of the
// state paths: the sockets of run/ (the owner's admin socket, egress.sock),
// the audit log, brokerd's session state, the sessions, and the grants and
// secrets. A sandbox that saw run/ could answer its own approval.
func refuseState(host string, state []string) error {
	for _, p := range state {
		if within(p, host) || within(host, p) {
			return fmt.Errorf("refusing to mount %s: it is or holds boxmaker's own state (%s)", host, p)
		}
	}
	return nil
}

func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// errNoMountKind is a mount kind of the catalog that brokerd cannot build;
// TestEveryMountKindIsBuilt proves there is none.
var errNoMountKind = errors.New("brokerd cannot build this kind of mount")

// mountsOf builds the mounts of kind for a call under g whose constrained
// argument is subject (a path, for the kinds that read one).
func mountsOf(kind wire.MountKind, g policy.Grant, subject, memory string) ([]sandbox.Mount, error) {
	switch kind {
	case wire.MountNone:
		return nil, nil
	case wire.MountCoveringEntry:
		return fileMount(g, subject)
	case wire.MountNote:
		return noteMount(g, subject, memory)
	case wire.MountGrantNotes:
		return searchMounts(g, memory)
	case wire.MountWritableNoteEntry:
		return notesMount(g, subject, memory, true)
	}
	return nil, fmt.Errorf("%w (kind %d)", errNoMountKind, kind)
}

func fileMount(g policy.Grant, path string) ([]sandbox.Mount, error) {
	p, err := policy.CleanPath(wire.AbsolutePathsDimension, path)
	if err != nil {
		return nil, err
	}
	entry, ok := coveringEntry(g.Constraints().Paths, p)
	if !ok {
		return nil, fmt.Errorf("no entry of grant %s covers %s", g.ID(), p)
	}
	// A symlink in the entry could have been planted by a sandbox that may
	// write there, and would point the grant elsewhere: the owner grants
	// real paths.
	real, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", entry, err)
	}
	if real != entry {
		return nil, fmt.Errorf("%s is a symlink to %s (or lies under one); grant the real path", entry, real)
	}
	return []sandbox.Mount{{Host: real, Path: entry}}, nil
}

func notesMount(g policy.Grant, path, memory string, writable bool) ([]sandbox.Mount, error) {
	p, err := policy.CleanPath(wire.MemoryPathsDimension, path)
	if err != nil {
		return nil, err
	}
	entry, ok := coveringEntry(g.Constraints().Paths, p)
	if !ok {
		return nil, fmt.Errorf("no entry of grant %s covers %s", g.ID(), p)
	}
	host := filepath.Join(memory, entry)
	if writable {
		if err := ensureEntry(memory, host, entry == p); err != nil {
			return nil, err
		}
	}
	real, err := sandbox.Resolve(memory, host)
	if err != nil {
		return nil, err
	}
	// The entry must be itself, not a symlink to another part of memory/
	// that a notes_write sandbox planted: that would hand one grant's
	// notes to another grant, with the other grant's labels.
	realMemory, err := filepath.EvalSymlinks(memory)
	if err != nil {
		return nil, err
	}
	if real != filepath.Join(realMemory, entry) {
		return nil, fmt.Errorf("notes entry %s leads to %s: a symlink is in the way", entry, real)
	}
	return []sandbox.Mount{{Host: real, Path: filepath.Join(memoryMount, entry), Writable: writable}}, nil
}

// coveringEntry finds the entry that is p or one of its parent directories.
func coveringEntry(entries []string, p string) (string, bool) {
	for _, e := range entries {
		if p == e || strings.HasPrefix(p, strings.TrimSuffix(e, "/")+"/") {
			return e, true
		}
	}
	return "", false
}

// ensureEntry creates a missing notes_write entry so that it can be
// mounted: an empty file when the write names the entry itself, else a
// directory. Before creating anything it checks that the nearest existing
// ancestor really lies in memory/, so that a symlink among the parents
// cannot make it create directories elsewhere.
func ensureEntry(memory, host string, isFile bool) error {
	if _, err := os.Lstat(host); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := sandbox.Resolve(memory, existingAncestor(host)); err != nil {
		return err
	}
	dir := host
	if isFile {
		dir = filepath.Dir(host)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if !isFile {
		return nil
	}
	f, err := os.OpenFile(host, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

func existingAncestor(p string) string {
	for {
		if _, err := os.Lstat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
		p = filepath.Dir(p)
	}
}

// noteMount mounts the one note a notes_read call reads, read-only: the
// result is labelled from the labels of what the sandbox could see, so it
// sees that file and nothing beside it.
func noteMount(g policy.Grant, path, memory string) ([]sandbox.Mount, error) {
	p, err := policy.CleanPath(wire.MemoryPathsDimension, path)
	if err != nil {
		return nil, err
	}
	if _, ok := coveringEntry(g.Constraints().Paths, p); !ok {
		return nil, fmt.Errorf("no entry of grant %s covers %s", g.ID(), p)
	}
	real, err := realNote(memory, p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a note (a regular file)", p)
	}
	return []sandbox.Mount{{Host: real, Path: filepath.Join(memoryMount, p)}}, nil
}

// searchMounts mounts, read-only, each entry of a notes_search grant's
// paths that exists; an entry inside another is mounted with it. The result
// is labelled from every labelled note in them, so a secret folder belongs
// in a grant of its own.
func searchMounts(g policy.Grant, memory string) ([]sandbox.Mount, error) {
	entries := g.Constraints().Paths
	if len(entries) == 0 {
		// The grant parser requires paths; a grant without them searches nothing.
		return nil, fmt.Errorf("grant %s names no paths to search", g.ID())
	}
	var mounts []sandbox.Mount
	for _, e := range entries {
		p, err := policy.CleanPath(wire.MemoryPathsDimension, e)
		if err != nil {
			return nil, err
		}
		if covered(entries, p) {
			continue
		}
		real, err := realNote(memory, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing there to search yet
		}
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, sandbox.Mount{Host: real, Path: filepath.Join(memoryMount, p)})
	}
	return mounts, nil
}

// covered reports whether another entry holds p.
func covered(entries []string, p string) bool {
	for _, e := range entries {
		if c, err := policy.CleanPath(wire.MemoryPathsDimension, e); err == nil && c != p && within(c, p) {
			return true
		}
	}
	return false
}

// realNote is memory/p's real path, refused when a symlink stands anywhere
// in it: a planted symlink would show another part of memory/ under p's
// grant.
func realNote(memory, p string) (string, error) {
	host := filepath.Join(memory, p)
	if _, err := os.Lstat(host); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	} else if err != nil {
		return "", err
	}
	real, err := sandbox.Resolve(memory, host)
	if err != nil {
		return "", err
	}
	realMemory, err := filepath.EvalSymlinks(memory)
	if err != nil {
		return "", err
	}
	if real != filepath.Join(realMemory, p) {
		return "", fmt.Errorf("%s leads to %s: a symlink is in the way", p, real)
	}
	return real, nil
}

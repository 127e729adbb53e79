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

// mountsFor returns what a call's sandbox may see: for a file tool, only the
// grant entry that covers the requested path; for notes_search, memory/; for
// every other tool, nothing. Each host path must be its own real path (no
// symlink anywhere in it, so nothing a sandbox planted can redirect a grant),
// and none may be or hold boxmaker's own state (see refuseState).
func mountsFor(g policy.Grant, args wire.ToolArgs, memory string, state []string) ([]sandbox.Mount, error) {
	mounts, err := mountsOf(g, args, memory)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		if err := refuseState(m.Host, state); err != nil {
			return nil, err
		}
	}
	return mounts, nil
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

func mountsOf(g policy.Grant, args wire.ToolArgs, memory string) ([]sandbox.Mount, error) {
	switch args.(type) {
	case wire.FileReadArgs:
		return fileMount(g, args.Subject())
	case wire.NotesReadArgs:
		return notesMount(g, args.Subject(), memory, false)
	case wire.NotesWriteArgs:
		return notesMount(g, args.Subject(), memory, true)
	case wire.NotesSearchArgs:
		real, err := sandbox.Resolve(memory, memory)
		if err != nil {
			return nil, err
		}
		return []sandbox.Mount{{Host: real, Path: memoryMount}}, nil
	default:
		return nil, nil
	}
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

package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Dir is a directory of grant files that brokerd reads before every
// decision. Load answers what LoadDir would answer at that moment, but
// parses a file only when its bytes differ from what was parsed last time,
// and reads the files only when something may have changed:
//
//   - An inotify watch on the directory, set before the files are read, says
//     whether anything in it was created, written, renamed, removed or had
//     its mode changed since the last Load; the kernel queues that event
//     before the writer's system call returns, so a change made before a
//     call begins is seen by that call.
//   - What the watch cannot see is checked on every Load: the directory path
//     itself (one stat: a replaced or moved directory, a retargeted symlink,
//     an ancestor made unsearchable), and the files it cannot vouch for (a
//     symlink, whose target lives elsewhere, and a file with other hard
//     links), whose bytes are read again each time.
//   - Where inotify cannot be had (a limit reached, another system), every
//     Load reads every file, as LoadDir does; Uncached says why.
//
// Dir is safe for concurrent use. The slices Load returns are shared with
// later calls and must not be modified.
type Dir struct {
	path    string
	parse   func(file string, data []byte) (Grant, error) // ParseGrant; tests count calls
	noWatch bool                                          // tests: behave as if inotify could not be had

	mu        sync.Mutex
	w         *watch
	unwatched error                  // why there is no watch; nil while there is one or before the first Load
	id        dirID                  // the directory the watch is on
	fresh     bool                   // the watch has stood since files were read
	files     map[string]*cachedFile // by file name, as read last
	names     []string               // the keys of files, in id order
	rereads   []string               // the names of files with reread set
	grants    []Grant
	bad       []error
}

// cachedFile is one grant file as Dir last read it.
type cachedFile struct {
	data   []byte // nil when it could not be read
	grant  Grant
	err    error
	reread bool // the watch cannot vouch for it: read it on every Load
}

// NewDir returns a Dir for path. It does no I/O until the first Load.
func NewDir(path string) *Dir {
	return &Dir{path: path, parse: ParseGrant, files: map[string]*cachedFile{}}
}

// Load returns the grants in the directory as they are now and one error per
// file that did not parse, both sorted by id, exactly as LoadDir does. err is
// set only when the directory itself cannot be read; the cache is then
// dropped, so that nothing of it outlives the directory.
func (d *Dir) Load() (grants []Grant, bad []error, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, err := statDir(d.path)
	if err != nil {
		d.forget()
		return nil, nil, fmt.Errorf("grants: %w", err)
	}
	changed, ended := true, true
	if d.w != nil && id == d.id {
		changed, ended = d.w.drain()
	}
	if ended {
		d.rewatch(id)
	}
	if changed || !d.fresh {
		err = d.readAll()
	} else {
		d.reread()
	}
	if err != nil {
		d.forget()
		return nil, nil, err
	}
	return d.grants, d.bad, nil
}

// Uncached reports why Load reads every file on every call, or nil when a
// watch lets it skip them.
func (d *Dir) Uncached() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.unwatched
}

// Close releases the watch. A Load after Close works, watching again.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forget()
	return nil
}

// rewatch replaces the watch with one on the directory now at d.path, which
// had identity id when it was looked at; everything cached is read again.
// The watch is set before anything is read, so that no change falls between.
func (d *Dir) rewatch(id dirID) {
	d.forget()
	d.id = id
	if d.noWatch {
		d.unwatched = errors.New("watching is off, so every call reads every grant file")
		return
	}
	d.w, d.unwatched = newWatch(d.path)
}

// forget drops the watch and everything read, keeping the parsed files.
func (d *Dir) forget() {
	if d.w != nil {
		d.w.close()
		d.w = nil
	}
	d.fresh = false
}

// readAll lists the directory and reads every grant file in it, parsing
// only those whose bytes changed since they were last parsed.
func (d *Dir) readAll() error {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	names := tomlNames(entries)
	files := make(map[string]*cachedFile, len(names))
	for _, name := range names {
		files[name] = d.read(name)
	}
	d.files, d.names, d.rereads = files, names, nil
	for _, name := range names {
		if files[name].reread {
			d.rereads = append(d.rereads, name)
		}
	}
	d.rebuild()
	d.fresh = d.w != nil
	return nil
}

// reread reads again the files the watch cannot vouch for, and rebuilds the
// answer if any of them changed.
func (d *Dir) reread() {
	changed := false
	for _, name := range d.rereads {
		if f := d.read(name); f != d.files[name] {
			d.files[name], changed = f, true
		}
	}
	if changed {
		d.rebuild()
	}
}

// read reads one file and returns what it says: the cached *cachedFile
// itself when its bytes are the ones parsed last, so that a caller can tell
// "unchanged" by pointer. A file that cannot be read is never cached.
func (d *Dir) read(name string) *cachedFile {
	path := filepath.Join(d.path, name)
	data, reread, err := readGrantFile(path)
	if err != nil {
		return &cachedFile{err: grantReadError(path, err), reread: true}
	}
	if old := d.files[name]; old != nil && old.data != nil && old.reread == reread && bytes.Equal(old.data, data) {
		return old
	}
	g, perr := d.parse(path, data)
	return &cachedFile{data: data, grant: g, err: perr, reread: reread}
}

// rebuild makes the answer from the files, in id order. It makes new
// slices: callers may still be reading the old ones.
func (d *Dir) rebuild() {
	var grants []Grant
	var bad []error
	for _, name := range d.names {
		if f := d.files[name]; f.err != nil {
			bad = append(bad, f.err)
		} else {
			grants = append(grants, f.grant)
		}
	}
	d.grants, d.bad = grants, bad
}

// readGrantFile reads path as LoadFile does and says whether the watch on
// its directory cannot vouch for it: a symlink's target and a file with
// other links can change without an event in the directory.
func readGrantFile(path string) (data []byte, reread bool, err error) {
	if data, err = os.ReadFile(path); err != nil {
		return nil, true, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return data, true, nil // gone since: the next Load reads it again
	}
	return data, fi.Mode()&fs.ModeSymlink != 0 || otherLinks(fi), nil
}

// grantReadError is the error LoadFile gives for a file it cannot read.
func grantReadError(path string, err error) error {
	return &GrantError{File: path, Problems: []Problem{{Reason: err.Error()}}}
}

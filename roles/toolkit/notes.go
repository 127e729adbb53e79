package toolkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// Bounds on notes_search: it stops at maxMatches, cuts each line at
// maxMatchLine bytes, and skips files over maxSearchFile bytes.
const (
	maxMatches    = 200
	maxMatchLine  = 300
	maxSearchFile = 4 << 20
)

// notePath maps a path relative to memory/ to where it is in the sandbox.
func (t *tools) notePath(tool, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: %q must be a path inside the notes directory", tool, rel)
	}
	return filepath.Join(t.memory, rel), nil
}

func (t *tools) notesRead(a wire.NotesReadArgs) toolrun.Output {
	p, err := t.notePath("notes_read", a.Path)
	if err != nil {
		return failed("notes_read", "%v", err)
	}
	text, err := readText(p, syscall.O_NOFOLLOW, t.job.Limits.OutputBytes)
	if err != nil {
		return failed("notes_read", "%v", t.relative(err))
	}
	return succeeded(text)
}

// notesWrite replaces a note whole: it writes a temporary file beside it
// and renames it over the note, so a reader never sees half a note and a
// symlink at the note's path is replaced, never followed.
func (t *tools) notesWrite(a wire.NotesWriteArgs) toolrun.Output {
	p, err := t.notePath("notes_write", a.Path)
	if err != nil {
		return failed("notes_write", "%v", err)
	}
	if int64(len(a.Content)) > t.job.Limits.FileBytes {
		return failed("notes_write", "the note is %d bytes, over the limit of %d", len(a.Content), t.job.Limits.FileBytes)
	}
	if err := replaceFile(p, []byte(a.Content)); err != nil {
		return failed("notes_write", "%v", t.relative(err))
	}
	return succeeded(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path))
}

// replaceFile writes data to path through a temporary file and a rename,
// creating parent directories (only below a writable mount can it).
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, ".notes-write-*")
	if errors.Is(err, syscall.EROFS) {
		// A grant whose entry is this one file mounts the file alone, on
		// the read-only root: write it in place, never through a link.
		return writeInPlace(path, data)
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close())
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// writeInPlace replaces the content of the existing regular file at path.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Sync(), f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// relative rewrites the sandbox's paths in err as paths relative to
// memory/, which is what the model asked for.
func (t *tools) relative(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), t.memory+"/", ""))
}

// notesSearch finds the query, case-insensitively, in the text files of
// every notes entry mounted for this job.
func (t *tools) notesSearch(a wire.NotesSearchArgs) toolrun.Output {
	if strings.TrimSpace(a.Query) == "" {
		return failed("notes_search", "the query is empty")
	}
	s := searcher{needle: strings.ToLower(a.Query), memory: t.memory}
	for _, m := range t.job.Mounts {
		if within(t.memory, m.Path) {
			if err := filepath.WalkDir(m.Path, s.visit); err != nil && !errors.Is(err, errEnough) {
				return failed("notes_search", "%v", t.relative(err))
			}
		}
	}
	if s.matches == 0 {
		return succeeded(fmt.Sprintf("no notes contain %q", a.Query))
	}
	if s.matches >= maxMatches {
		fmt.Fprintf(&s.out, "[stopped after %d matches]\n", maxMatches)
	}
	return succeeded(s.out.String())
}

// within reports whether path is dir or lies below it.
func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

var errEnough = errors.New("enough matches")

type searcher struct {
	needle  string
	memory  string
	out     bytes.Buffer
	matches int
}

// visit searches one file. It never follows a symlink (WalkDir does not,
// and only regular files are opened, with O_NOFOLLOW).
func (s *searcher) visit(path string, d fs.DirEntry, err error) error {
	if err != nil || !d.Type().IsRegular() {
		return nil // an unreadable directory or a non-file: not a note to search
	}
	if fi, err := d.Info(); err != nil || fi.Size() > maxSearchFile {
		return err
	}
	text, err := readText(path, syscall.O_NOFOLLOW, maxSearchFile)
	if err != nil {
		return nil // binary or vanished: not a note to search
	}
	rel, _ := filepath.Rel(s.memory, path)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, maxSearchFile)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.Contains(strings.ToLower(line), s.needle) {
			continue
		}
		fmt.Fprintf(&s.out, "%s:%d: %s\n", rel, n, prefix(strings.TrimSpace(line), maxMatchLine))
		if s.matches++; s.matches >= maxMatches {
			return errEnough
		}
	}
	return nil
}

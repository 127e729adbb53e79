package toolkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// notePath maps a path relative to memory/ to where it is in the sandbox.
func (t *tools) notePath(tool, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: %q must be a path inside the notes directory", tool, rel)
	}
	return filepath.Join(t.memory, rel), nil
}

func (t *tools) notesRead(_ context.Context, a wire.NotesReadArgs) toolrun.Output {
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
func (t *tools) notesWrite(_ context.Context, a wire.NotesWriteArgs) toolrun.Output {
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
	err := atomicfile.Write(path, data, mode)
	if errors.Is(err, syscall.EROFS) {
		// A grant whose entry is this one file mounts the file alone, on
		// the read-only root: write it in place, never through a link.
		return writeInPlace(path, data)
	}
	return err
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

// relative rewrites the sandbox's paths in err as paths relative to
// memory/, which is what the model asked for.
func (t *tools) relative(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), t.memory+"/", ""))
}

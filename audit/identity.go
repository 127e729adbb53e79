package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrReplaced: the log's directory, day file or lock file was deleted or
// replaced while the Writer had it open. Appending on would write to a file
// nobody can read any more (an unlinked inode) or fork the chain, so the
// Writer refuses every later append.
var ErrReplaced = errors.New("audit: the log was deleted or replaced while the writer had it open")

// recoverHint tells the owner what to do when the log is not what the
// writer, or its last checkpoint, says it should be.
const recoverHint = "to recover, restore the audit directory from a backup (the checkpoint names the seq and hash it must hold) and start brokerd again; " +
	"to give up the old chain instead, stop brokerd and run `boxmaker audit rebase --reason TEXT`, which moves audit/ and broker/checkpoint.last aside, keeping them, " +
	"and starts a new chain whose first record names the last checkpoint and the reason"

// checkFiles makes sure that the files the Writer holds open are still the
// ones at their paths, before each batch: an fstat and an lstat of each of
// three files, some microseconds against a batch's fsync.
func (w *Writer) checkFiles() error {
	if err := sameFile(w.dirf, w.dir); err != nil {
		return err
	}
	if w.cur != nil {
		if err := sameFile(w.cur, filepath.Join(w.dir, dayName(w.day))); err != nil {
			return err
		}
	}
	return sameFile(w.lock, filepath.Join(w.dir, lockName))
}

// sameFile returns an ErrReplaced error when the open f has no links left
// or path names another file (device and inode); nil when they agree, or
// when f cannot say (a test's stand-in for a file).
func sameFile(f any, path string) error {
	st, ok := f.(interface{ Stat() (os.FileInfo, error) })
	if !ok || f == nil {
		return nil
	}
	fi, err := st.Stat()
	if err != nil {
		return fmt.Errorf("audit: stat %s: %w", path, err)
	}
	open, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	var at syscall.Stat_t
	var found string
	switch err := syscall.Lstat(path, &at); {
	case open.Nlink == 0:
		found = "the open file has no links left: it was deleted"
	case errors.Is(err, fs.ErrNotExist):
		found = "nothing is at that path any more: it was deleted or moved away"
	case err != nil:
		return fmt.Errorf("audit: lstat %s: %w", path, err)
	case at.Dev != open.Dev || at.Ino != open.Ino:
		found = fmt.Sprintf("another file is at that path (device %d inode %d, not %d %d): it was replaced", at.Dev, at.Ino, open.Dev, open.Ino)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s: %s. No record is written after it, so brokerd stops serving tool calls; %s", ErrReplaced, path, found, recoverHint)
}

// fail stops the Writer for good with err, as a failed batch would.
func (w *Writer) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	w.wake.Broadcast()
}

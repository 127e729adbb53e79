// Package atomicfile replaces small files so that a crash leaves the old
// content or the new, never a mix, and so that the new name is on disk
// when the call returns. It is the one place boxmaker writes a file whole;
// it never follows a link at the temporary name (O_EXCL) and never writes
// in place.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temporary file created with O_EXCL beside
// it, written, given mode, fsynced, renamed over path, and the directory
// fsynced so that the rename itself survives a power cut.
func Write(path string, data []byte, mode fs.FileMode) error {
	if err := Replace(filepath.Dir(path), filepath.Base(path), data, mode); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Replace is Write without the directory's fsync, for a caller that
// replaces several files in one directory and syncs it once (SyncDir).
func Replace(dir, name string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*") // O_RDWR|O_CREATE|O_EXCL
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is left to remove
	_, err = tmp.Write(data)
	if err = errors.Join(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// SyncDir fsyncs a directory: what makes a create, rename or remove in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

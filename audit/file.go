package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// file is what the writer needs of an open file or directory. Tests put a
// failing one in its place to show that a failed write or fsync is never
// acknowledged.
type file interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// fileSystem opens the writer's files.
type fileSystem interface {
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a typed nil *os.File must not hide in the interface
	}
	return f, nil
}

// Modes of what the writer creates. Day files may be group-readable so that
// the owner's `boxmaker audit verify` can read them where the deployment gives
// the directory such a group; the lock file is the writer's alone.
const (
	dayFileMode = 0o640
	lockMode    = 0o600
)

// lockDir takes the directory's writer lock without waiting. The lock lasts
// as long as the returned file stays open, and the kernel drops it when the
// process dies, so a crashed brokerd never leaves a stale lock behind.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, lockMode)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("audit: lock %s: %w", dir, err)
	}
	return f, nil
}

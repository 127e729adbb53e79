package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dirID tells one directory from another: a path that now leads to another
// directory (replaced, moved, a symlink retargeted) needs a new watch.
type dirID struct{ dev, ino uint64 }

// statDir returns the identity of the directory at path, following symlinks
// as reading it does.
func statDir(path string) (dirID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return dirID{}, &os.PathError{Op: "open", Path: path, Err: err} // as os.ReadDir says it
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return dirID{}, &os.PathError{Op: "open", Path: path, Err: unix.ENOTDIR}
	}
	return dirID{dev: st.Dev, ino: st.Ino}, nil
}

// watchMask is every change to an entry that can change what it says:
// created, written, closed after writing, renamed in or out, removed, its
// mode or owner changed; and the directory itself removed or moved.
const watchMask = unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MODIFY | unix.IN_MOVE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ONLYDIR

// endMask is what ends a watch or loses events: the directory gone, moved or
// unmounted, the queue overflowed.
const endMask = unix.IN_IGNORED | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_UNMOUNT | unix.IN_Q_OVERFLOW

// watch is an inotify instance watching one directory.
type watch struct{ fd int }

// newWatch watches the directory at path (following symlinks). Its error
// says why Load must read every file instead.
func newWatch(path string) (*watch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("no inotify (%w), so every call reads every grant file", err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, watchMask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("cannot watch %s (%w), so every call reads every grant file", path, err)
	}
	return &watch{fd: fd}, nil
}

// drain reads every event queued so far and reports whether there was any,
// and whether the watch has ended (or may have lost events) and must be
// set again. An error reading counts as both.
func (w *watch) drain() (changed, ended bool) {
	var buf [4096]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		switch {
		case errors.Is(err, unix.EAGAIN):
			return changed, ended
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || n <= 0:
			return true, true
		}
		changed = true
		ended = ended || endsWatch(buf[:n])
	}
}

// endsWatch reports whether any event in buf, a read from an inotify
// descriptor, carries a mask in endMask. Each event is its 16-byte header
// (wd, mask, cookie, len, in the machine's byte order) and len bytes of name.
func endsWatch(buf []byte) bool {
	for len(buf) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(buf[4:8])
		size := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[12:16]))
		if mask&endMask != 0 || size > len(buf) {
			return true
		}
		buf = buf[size:]
	}
	return len(buf) != 0
}

func (w *watch) close() { unix.Close(w.fd) }

// otherLinks reports whether fi, from Lstat, is a file with more than one
// name: a write through another name raises no event in this directory.
func otherLinks(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t) // what os.Lstat gives on Linux
	return !ok || st.Nlink > 1
}

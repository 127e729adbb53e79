package nofollow

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// walkable are the resolve flags the walk honours: it never follows a
// symlink, magic or not, and never leaves the starting directory.
const walkable = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH

// openat2 is unix.Openat2; the tests swap it for one that answers ENOSYS.
var openat2 = unix.Openat2

// Open is unix.Openat2(dirfd, name, how) for a how whose Resolve holds
// RESOLVE_NO_SYMLINKS and nothing beyond RESOLVE_NO_MAGICLINKS and
// RESOLVE_BENEATH; any other how is refused with EINVAL, so a caller cannot
// ask for a resolution the walk would not keep. When openat2 answers ENOSYS
// (a seccomp filter, or a kernel before 5.6), the same open is made by walk.
// O_CLOEXEC is always added.
func Open(dirfd int, name string, how *unix.OpenHow) (int, error) {
	if how.Resolve&unix.RESOLVE_NO_SYMLINKS == 0 || how.Resolve&^walkable != 0 {
		return -1, unix.EINVAL
	}
	h := *how
	h.Flags |= unix.O_CLOEXEC
	for {
		fd, err := openat2(dirfd, name, &h)
		switch {
		case errors.Is(err, unix.ENOSYS):
			return walk(dirfd, name, &h)
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		}
		return fd, err
	}
}

// walk opens name as openat2 with how would, one component at a time: each
// directory on the way is opened O_PATH|O_NOFOLLOW from the one before and
// checked, on its own descriptor, to be a directory and not a link; the last
// component is opened with O_NOFOLLOW. It is stricter than openat2 in one
// way: any ".." is refused (EXDEV), even one that would stay beneath, so
// the walk only ever goes down from dirfd. A directory moved while the walk
// holds it is followed where it went, as the kernel's own walk would.
func walk(dirfd int, name string, how *unix.OpenHow) (int, error) {
	creates := how.Flags&unix.O_CREAT != 0
	switch {
	case how.Mode != 0 && !creates && how.Flags&unix.O_TMPFILE != unix.O_TMPFILE:
		return -1, unix.EINVAL // as openat2: a mode without a file to make
	case len(name) >= unix.PathMax:
		return -1, unix.ENAMETOOLONG
	case name == "":
		return -1, unix.ENOENT
	}
	absolute := strings.HasPrefix(name, "/")
	if absolute && how.Resolve&unix.RESOLVE_BENEATH != 0 {
		return -1, unix.EXDEV
	}
	dirs, last, trailing, err := components(name)
	if err != nil {
		return -1, err
	}
	cur := dirfd
	if absolute {
		cur = unix.AT_FDCWD
		dirs = append([]string{"/"}, dirs...)
	}
	if trailing {
		// "a/" names a directory: walk a as one, then open "." in it.
		dirs = append(dirs, last)
		last = "."
	}
	for i, d := range dirs {
		if trailing && creates && i == len(dirs)-1 && strings.HasSuffix(name, "/") {
			closeOwned(cur, dirfd)
			return -1, unix.EISDIR // as openat2: "a/" cannot be made ("a/." is walked, then ".")
		}
		next, err := openDir(cur, d)
		closeOwned(cur, dirfd)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	defer closeOwned(cur, dirfd)
	return openLast(cur, last, how)
}

// components splits name into the directories to walk through and the last
// component ("." when name names its start), and says whether name ends in
// "/" or "/.". An empty or "." component is skipped, as the kernel does;
// ".." is refused.
func components(name string) (dirs []string, last string, trailing bool, err error) {
	var parts []string
	raw := strings.Split(name, "/")
	for _, p := range raw {
		switch p {
		case "", ".":
			continue
		case "..":
			return nil, "", false, unix.EXDEV
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, ".", false, nil
	}
	// "a/" and "a/." name a directory, as the kernel reads them.
	end := raw[len(raw)-1]
	return parts[:len(parts)-1], parts[len(parts)-1], end == "" || end == ".", nil
}

// openDir opens the directory name in dir without following a link, and
// proves on the new descriptor that it is a directory and not a link.
func openDir(dir int, name string) (int, error) {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fd, nil
	case unix.S_IFLNK:
		unix.Close(fd)
		return -1, unix.ELOOP
	}
	unix.Close(fd)
	return -1, unix.ENOTDIR
}

// openLast opens the last component with the caller's flags and O_NOFOLLOW.
// openat2 with RESOLVE_NO_SYMLINKS hands back a link itself only for
// O_PATH|O_NOFOLLOW; with O_PATH alone the caller asked for no link, so one
// opened is closed again and refused, as openat2 would. openat2 also calls a
// link ELOOP where O_DIRECTORY|O_NOFOLLOW makes openat say ENOTDIR.
func openLast(dir int, name string, how *unix.OpenHow) (int, error) {
	fd, err := unix.Openat(dir, name, int(how.Flags)|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(how.Mode))
	if errors.Is(err, unix.ENOTDIR) && how.Flags&unix.O_DIRECTORY != 0 && isLink(dir, name) {
		return -1, unix.ELOOP
	}
	if err != nil || how.Flags&unix.O_PATH == 0 || how.Flags&unix.O_NOFOLLOW != 0 {
		return fd, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, unix.ELOOP
	}
	return fd, nil
}

// isLink reports whether name in dir is a symbolic link; it only chooses
// which error a refused open returns.
func isLink(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// closeOwned closes fd unless it is the caller's own or AT_FDCWD.
func closeOwned(fd, callers int) {
	if fd != callers && fd != unix.AT_FDCWD {
		unix.Close(fd)
	}
}

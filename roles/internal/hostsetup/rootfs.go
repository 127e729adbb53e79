package hostsetup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/roles/internal/units"

	"golang.org/x/sys/unix"
)

// This file is every file operation root does in a home for `up`. The rule
// (docs/decisions.md, 2026-12-01): root touches only what root made and no
// role can write. A path is used only where no role can change what it
// resolves to (rootOnlyPath); below a directory a role owns, root works
// through descriptors, one name at a time, never following a link, and
// changes only an entry whose owner and link count it checked on the
// descriptor it changes. privops_test.go at the repository root lists every
// privileged call of up and install with the reason it is safe.

// roleIDs are what "a role can write" is measured against: the uid of each
// role and the gid of every group a role is in.
type roleIDs struct {
	uids map[uint32]string // uid: role
	gids map[uint32]bool
}

func idsOf(creds map[string]*syscall.Credential) roleIDs {
	ids := roleIDs{uids: map[uint32]string{}, gids: map[uint32]bool{}}
	for role, c := range creds {
		ids.uids[c.Uid] = role
		ids.gids[c.Gid] = true
		for _, g := range c.Groups {
			ids.gids[g] = true
		}
	}
	return ids
}

// writable reports whether a role may add, remove or rename entries in a
// directory with this owner, group and mode (or write a file with them).
func (ids roleIDs) writable(st *syscall.Stat_t) bool {
	_, owned := ids.uids[st.Uid]
	return owned || st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && ids.gids[st.Gid])
}

// rootOnlyPath reports an error unless no role can change what path
// resolves to, nor write what it names where that exists. From / down,
// following symbolic links (at most 40) and checking each the same way: no
// step is owned by a role; no directory on the way is writable by a role,
// except a sticky one whose next step exists (a role cannot replace what it
// does not own there); a step that does not exist yet lies in a directory
// no role can write at all, so that root, and no role, makes it. ACLs are
// not read: a home where they grant a role more is the owner's doing.
func rootOnlyPath(path string, ids roleIDs) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	var root syscall.Stat_t
	if err := syscall.Lstat("/", &root); err != nil {
		return err
	}
	cur, curStat := "/", root
	steps := strings.Split(strings.Trim(filepath.Clean(path), "/"), "/")
	for links := 0; len(steps) > 0; {
		name := steps[0]
		steps = steps[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur holds no link: .. is its parent
			if err := syscall.Lstat(cur, &curStat); err != nil {
				return err
			}
			continue
		}
		next := filepath.Join(cur, name)
		var st syscall.Stat_t
		err := syscall.Lstat(next, &st)
		switch {
		case errors.Is(err, syscall.ENOENT):
			if ids.writable(&curStat) {
				return fmt.Errorf("%s: %s does not exist yet and a role could make it first: %s is writable by a role", path, next, cur)
			}
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		case ids.uids[st.Uid] != "":
			return fmt.Errorf("%s: %s belongs to %s's user", path, next, ids.uids[st.Uid])
		case ids.writable(&curStat) && curStat.Mode&syscall.S_ISVTX == 0:
			return fmt.Errorf("%s: a role could replace %s: %s is writable by a role", path, next, cur)
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFLNK:
			if links++; links > 40 {
				return fmt.Errorf("%s: too many symbolic links", path)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				cur, curStat = "/", root
			}
			steps = append(strings.Split(target, "/"), steps...)
		case syscall.S_IFDIR:
			cur, curStat = next, st
		default:
			if len(steps) > 0 {
				return fmt.Errorf("%s: %s is not a directory", path, next)
			}
			cur, curStat = next, st
		}
	}
	if ids.writable(&curStat) {
		return fmt.Errorf("%s is writable by a role", path)
	}
	return nil
}

// beneath is how root resolves a name below a directory descriptor: never
// through a symbolic link (nor a /proc magic link), never above the
// directory.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens name below dir with openat2 and beneath; mode is for
// O_CREAT.
func openBeneath(dir int, name string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: beneath}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode)
	}
	for {
		fd, err := unix.Openat2(dir, name, &how)
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
}

// namesIn lists a directory descriptor's entries through a descriptor of
// its own.
func namesIn(dir int) ([]string, error) {
	fd, err := openBeneath(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

// handOverMemory gives brokerd the notes the owner put in memory/ before any
// role owned it: `boxmaker init` run as root, or by the owner before the
// first `up` as root. It does nothing when memory/ is absent or a role owns
// it already, which is every start after the first: a directory a role can
// write is never walked. Otherwise memory/ and every directory it walks
// into are owned by someone other than a role (its "maker") and writable by
// no one else, so no role can change them while the walk runs; even so
// each step goes through descriptors. Directories and single-link regular
// files of the maker become brokerd's; anything else (links, other owners,
// other kinds) is left as it is, and named in log.
func handOverMemory(home string, broker *syscall.Credential, ids roleIDs, log io.Writer) error {
	homeFD, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return fmt.Errorf("the home %s: %w", home, err)
	}
	defer unix.Close(homeFD)
	memFD, err := openBeneath(homeFD, "memory", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return fmt.Errorf("memory/: %w", err)
	}
	defer unix.Close(memFD)
	var st unix.Stat_t
	if err := unix.Fstat(memFD, &st); err != nil {
		return err
	}
	if ids.uids[st.Uid] != "" {
		return nil
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("memory/ is writable by its group or by everyone: refusing to hand it to brokerd (chmod go-w %s)", filepath.Join(home, "memory"))
	}
	h := handover{maker: st.Uid, broker: broker, log: log}
	return h.dir(memFD, "memory", 0)
}

type handover struct {
	maker  uint32
	broker *syscall.Credential
	log    io.Writer
}

func (h handover) dir(fd int, path string, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%s: memory/ is nested too deep to hand over", path)
	}
	names, err := namesIn(fd)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range names {
		if err := h.entry(fd, name, path+"/"+name, depth); err != nil {
			return err
		}
	}
	return nil
}

// entry hands over one name below dir, through a descriptor of its own,
// checked on that descriptor.
func (h handover) entry(dir int, name, path string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	kind := st.Mode & unix.S_IFMT
	if st.Uid != h.maker || (kind != unix.S_IFDIR && kind != unix.S_IFREG) {
		fmt.Fprintf(h.log, "up: %s: left as it is (not a file or directory of memory/'s owner)\n", path)
		return nil
	}
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	if kind == unix.S_IFDIR {
		flags = unix.O_RDONLY | unix.O_DIRECTORY
	}
	fd, err := openBeneath(dir, name, flags, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	switch {
	case st.Uid != h.maker || st.Mode&unix.S_IFMT != kind:
		return fmt.Errorf("%s changed while up handed memory/ over", path)
	case kind == unix.S_IFREG && st.Nlink != 1:
		fmt.Fprintf(h.log, "up: %s: left as it is (it has %d links)\n", path, st.Nlink)
		return nil
	case kind == unix.S_IFDIR && st.Mode&0o022 != 0:
		fmt.Fprintf(h.log, "up: %s: left as it is (writable by its group or by everyone)\n", path)
		return nil
	case kind == unix.S_IFDIR:
		if err := h.dir(fd, path, depth+1); err != nil {
			return err
		}
	}
	return unix.Fchown(fd, int(h.broker.Uid), int(h.broker.Gid))
}

// ensurePlanFiles makes each file of the plan (memory/core.md) and sets its
// owner and mode, where its directory belongs to a role.
//
// WARNING: brokerd owns memory/, so core.md may be anything it put there: a
// symbolic link, a hard link to a file of root's (which needs no race where
// fs.protected_hardlinks is 0), a root-owned file whose other name was
// since removed. So the file is reached through descriptors without
// following links, and root changes only a file it has just created, or a
// regular file with one link that already belongs to the plan's owner;
// anything else is refused. TestRootSetupRacingBroker proves it.
func ensurePlanFiles(home string, p units.Plan, sys system) error {
	homeFD, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(homeFD)
	for _, d := range p.Dirs {
		if !d.File {
			continue
		}
		rel, err := filepath.Rel(home, d.Path)
		if err != nil || !filepath.IsLocal(rel) {
			return fmt.Errorf("%s is not in the home %s", d.Path, home)
		}
		uid, err := sys.lookupUser(d.Owner)
		if err != nil {
			return err
		}
		gid, err := sys.lookupGroup(d.Group)
		if err != nil {
			return err
		}
		if err := ensureFileBeneath(homeFD, rel, uid, gid, d.Mode.FileMode()); err != nil {
			return fmt.Errorf("%s: %w", d.Path, err)
		}
	}
	return nil
}

func ensureFileBeneath(home int, rel string, uid, gid int, mode fs.FileMode) error {
	fd, err := openBeneath(home, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if errors.Is(err, unix.EEXIST) {
		fd, err = openBeneath(home, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return fmt.Errorf("refusing to set its owner: %w", err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Uid != uint32(uid) {
			return fmt.Errorf("refusing to set its owner: not a regular file with one link owned by uid %d "+
				"(uid %d, %d links); if you put it there, remove it or chown it yourself", uid, st.Uid, st.Nlink)
		}
	} else if err != nil {
		return err
	} else {
		defer unix.Close(fd)
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return err
	}
	return unix.Fchmod(fd, uint32(mode.Perm()))
}

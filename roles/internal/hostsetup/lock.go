package hostsetup

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// upLockName is the lock a running up holds on its home, below the home:
// one supervisor per home. Two would fight over the sockets, the audit
// log's lock and run/up.json.
const upLockName = "run/up.lock"

// lockHome takes the home's lock for as long as the returned file stays
// open (close-on-exec: no role holds it), and writes this process's pid in
// it for the next up to name. It runs before anything else touches the
// home, so it makes at most run/ and the lock file, through a descriptor
// of the home, never following a link, and writes the pid only into a
// regular file of one link that belongs to this uid.
func lockHome(home string) (*os.File, error) {
	homeFD, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the home %s: %w", home, err)
	}
	defer unix.Close(homeFD)
	if err := unix.Mkdirat(homeFD, "run", 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("%s/run: %w", home, err)
	}
	fd, err := openBeneath(homeFD, upLockName, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", home, upLockName, err)
	}
	f := os.NewFile(uintptr(fd), home+"/"+upLockName)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		defer f.Close()
		return nil, fmt.Errorf("already up, pid %s: one boxmaker up serves %s already; chat with it (boxmaker chat --home %s), or stop it first",
			lockHolder(f), home, home)
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if err := writePid(fd); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return f, nil
}

// writePid replaces the lock file's content with this process's pid, once
// fstat shows it is a file up made: a role cannot have linked another file
// of root's there.
func writePid(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("not a file of one link of uid %d (uid %d, %d links): remove it", os.Geteuid(), st.Uid, st.Nlink)
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		return err
	}
	_, err := unix.Pwrite(fd, []byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// lockHolder reads the pid the holder wrote, waiting briefly for a holder
// that has just taken the lock.
func lockHolder(f *os.File) string {
	for range 20 {
		buf := make([]byte, 32)
		n, _ := f.ReadAt(buf, 0)
		if pid := strings.TrimSpace(string(buf[:n])); pid != "" {
			return pid
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "unknown"
}

// openLog opens up's log, FILE of --log, once up holds the home's lock: a
// second up must not empty the first's log. It follows no link at the end
// and empties only a regular file of one link.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file of one link (%v)", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

package mountview

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// View is a thread of this process in a mount namespace of its own, where
// the roles can reach the paths they need. Processes started through it
// live in that namespace.
type View struct {
	starts chan start
	done   chan struct{}
}

type start struct {
	cmd *exec.Cmd
	err chan error
}

// New makes the view: a thread in a new mount namespace, with each of
// blocked covered by a tmpfs that holds each of paths below it (as written
// and with links resolved), bind-mounted at its own path. Only root can.
func New(paths, blocked []string) (*View, error) {
	bind, err := keep(paths)
	if err != nil {
		return nil, err
	}
	v := &View{starts: make(chan start), done: make(chan struct{})}
	ready := make(chan error, 1)
	go v.serve(bind, blocked, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return v, nil
}

// Start starts cmd from inside the view. A child's Pdeathsig follows the
// view's thread: it lives until Close.
func (v *View) Start(cmd *exec.Cmd) error {
	s := start{cmd: cmd, err: make(chan error, 1)}
	select {
	case v.starts <- s:
		return <-s.err
	case <-v.done:
		return errors.New("mountview: the view is closed")
	}
}

// Close ends the view's thread. The namespace lives on in the processes it
// started, and ends with the last of them.
func (v *View) Close() { close(v.starts) }

// serve runs on a thread of its own for the view's life. The thread is
// never unlocked, so the runtime ends it with this goroutine instead of
// handing a thread in another namespace to other goroutines.
func (v *View) serve(bind, blocked []string, ready chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread stands for the process in /proc/self, and the
		// runtime never ends it: it stays in the host's namespace. Another
		// goroutine takes over, kept off this thread while it is held.
		moved := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(moved)
			v.serveLocked(bind, blocked, ready)
		}()
		<-moved
		runtime.UnlockOSThread()
		return
	}
	v.serveLocked(bind, blocked, ready)
}

func (v *View) serveLocked(bind, blocked []string, ready chan<- error) {
	defer close(v.done)
	if err := enter(bind, blocked); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for s := range v.starts {
		s.err <- s.cmd.Start()
	}
}

// enter moves this thread into a new mount namespace and builds the view
// there.
func enter(bind, blocked []string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mountview: a mount namespace of its own: %w", err)
	}
	// Nothing mounted here reaches the host, nor the host's later mounts here.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mountview: making / private: %w", err)
	}
	// Descriptors of what is bound, opened before any tmpfs hides it, and
	// in this namespace: a bind's source must be one of its mounts.
	fds := map[string]int{}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, p := range bind {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("mountview: %s: %w", p, err)
		}
		fds[p] = fd
	}
	for _, dir := range blocked {
		if err := cover(dir, bind, fds); err != nil {
			return err
		}
	}
	return nil
}

// cover mounts a tmpfs over dir and binds back each path of bind below it.
func cover(dir string, bind []string, fds map[string]int) error {
	if err := unix.Mount("boxmaker-view", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mountview: a tmpfs over %s: %w", dir, err)
	}
	for _, p := range bind {
		if !within(p, dir) || p == dir {
			continue
		}
		if err := bindAt(p, dir, fds[p]); err != nil {
			return fmt.Errorf("mountview: %s: %w", p, err)
		}
	}
	return nil
}

// bindAt makes p's place in the tmpfs over dir (directories 0755, root's)
// and binds what fd holds there.
func bindAt(p, dir string, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	rel, _ := filepath.Rel(dir, p)
	parts := strings.Split(rel, "/")
	cur := dir
	for _, name := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, name)
		if err := unix.Mkdir(cur, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Mkdir(p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	} else if err := os.WriteFile(p, nil, 0o644); err != nil {
		return err
	}
	// The descriptor's own file, not whatever p names by now.
	return unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), p, "", unix.MS_BIND|unix.MS_REC, "")
}

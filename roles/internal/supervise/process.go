package supervise

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runOnce starts d, reports through onReady once it listens on its sockets
// (or failed to get there), and waits for it to end or ctx to stop it. It
// returns the last line the role wrote and why it ended.
func (s *supervisor) runOnce(ctx context.Context, d Daemon, onReady func(error)) (last string, err error) {
	before := socketsBefore(d.Sockets)
	cmd, out := s.command(d)
	if err := s.start(cmd); err != nil {
		onReady(fmt.Errorf("%s did not start: %w", d.Name, err))
		return "", err
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait() // returns once the role's output is all copied
		out.flush()
		exited <- err
	}()
	s.setState(d, Status{State: StateStarting, PID: cmd.Process.Pid})
	defer s.endRole(d) // before the next start: the role is stopped when all of it is
	if err := s.awaitSockets(ctx, d, before, exited); err != nil {
		stop(cmd, exited)
		// The role's last line is most often why: it goes with the error,
		// which is all the terminal shows when the log is a file.
		if last := out.lastLine(); last != "" {
			onReady(fmt.Errorf("%s did not start: %w (its last line: %s)", d.Name, err, last))
		} else {
			onReady(fmt.Errorf("%s did not start: %w", d.Name, err))
		}
		return out.lastLine(), err
	}
	s.logf("%s running, pid %d", d.Name, cmd.Process.Pid)
	s.setState(d, Status{State: StateRunning, PID: cmd.Process.Pid})
	onReady(nil)
	select {
	case err := <-exited:
		return out.lastLine(), exitError(err)
	case <-ctx.Done():
		stop(cmd, exited)
		s.logf("%s stopped", d.Name)
		return "", nil
	}
}

func (s *supervisor) start(cmd *exec.Cmd) error {
	if s.opts.Start != nil {
		return s.opts.Start(cmd)
	}
	return cmd.Start()
}

func (s *supervisor) command(d Daemon) (*exec.Cmd, *roleWriter) {
	cmd := &exec.Cmd{Path: s.opts.Executable, Args: append([]string{d.Name}, d.Args...), Env: d.Env}
	out := newRoleWriter(s.log, d.Name)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a stop reaches whatever it started; and it
	// dies with us rather than outlive the supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: d.Cred}
	// A child that left the group may hold the role's stdout open; Wait
	// then returns this long after the role itself exited, and endRole
	// ends that child.
	cmd.WaitDelay = time.Second
	return cmd, out
}

// socketID tells one socket file from another that had its name: a stale
// socket of an earlier run of the role is not the one this run made.
type socketID struct{ ino, ctimeNs int64 }

func socketOf(path string) (socketID, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return socketID{}, false
	}
	return socketID{int64(st.Ino), st.Ctim.Nano()}, true
}

func socketsBefore(paths []string) map[string]socketID {
	out := map[string]socketID{}
	for _, p := range paths {
		if id, ok := socketOf(p); ok {
			out[p] = id
		}
	}
	return out
}

// listening reports whether path is a socket that this run of the role
// made (not the one before it started) and finished: it has the mode the
// role gives it after listen. Readiness never dials: up is not a client of
// the roles, and a role logs every peer it refuses.
func (s *supervisor) listening(path string, before map[string]socketID) bool {
	id, ok := socketOf(path)
	if old, stale := before[path]; !ok || (stale && old == id) {
		return false
	}
	if s.opts.SocketMode == 0 {
		return true
	}
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil && st.Mode&0o7777 == uint32(s.opts.SocketMode.Perm())
}

// awaitSockets waits until d listens on each of its sockets.
func (s *supervisor) awaitSockets(ctx context.Context, d Daemon, before map[string]socketID, exited chan error) error {
	deadline := time.Now().Add(s.opts.StartWait)
	for _, path := range d.Sockets {
		for !s.listening(path, before) {
			select {
			case err := <-exited:
				exited <- err
				return exitError(err)
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(25 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not listen within %s", path, s.opts.StartWait)
			}
		}
	}
	return nil
}

// stop sends SIGTERM to the process group, and SIGKILL if it lingers;
// endRole then ends what left the group.
func stop(cmd *exec.Cmd, exited chan error) {
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-exited
	}
}

func exitError(err error) error {
	if err == nil {
		return errors.New("exited with status 0")
	}
	return err
}

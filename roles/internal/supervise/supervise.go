package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Daemon is one role to run.
type Daemon struct {
	Name    string
	Args    []string            // after argv[0], which is Name
	Env     []string            // the whole environment it gets
	Cred    *syscall.Credential // nil: the caller's uid
	Sockets []string            // what it listens on: it is ready when each answers
}

// Options is what Run needs.
type Options struct {
	Executable  string // the boxmaker binary, re-executed for each role
	Daemons     []Daemon
	Log         io.Writer
	MaxRestarts int            // restarts within Window before up gives up
	Window      time.Duration  // and the time a role must run to count as started well
	StartWait   time.Duration  // how long a role may take to answer on its sockets
	OnChange    func([]Status) // called whenever a role starts or stops
	// KillHelper is the command that, run under a role's uid, ends every
	// process of that uid (KillOwnUID behind a hidden command). Each time a
	// role with a uid of its own exits or is stopped, the supervisor runs
	// it, then ends from root whatever is still left. Nil: root alone does
	// it, process by process.
	KillHelper func(uid uint32) KillCommand
}

// Status is one role as up sees it.
type Status struct {
	Role    string   `json:"role"`
	PID     int      `json:"pid"`
	UID     uint32   `json:"uid"`
	Sockets []string `json:"sockets"`
}

// Run starts the daemons in order, each once the previous one answers on
// its sockets, calls ready when all do, and supervises them until ctx ends
// or one dies too often; then it stops them all, last started first.
func Run(ctx context.Context, opts Options, ready func()) error {
	if err := distinctUIDs(opts.Daemons); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &supervisor{opts: opts, mu: &sync.Mutex{}, running: map[string]Status{}}
	var wg sync.WaitGroup
	for _, d := range opts.Daemons {
		started := make(chan error, 1)
		wg.Go(func() {
			if err := s.keep(ctx, d, started); err != nil {
				cancel(err)
			}
		})
		if err := <-started; err != nil {
			cancel(err)
			break
		}
	}
	if context.Cause(ctx) == nil && ready != nil {
		ready()
	}
	<-ctx.Done()
	wg.Wait()
	err := context.Cause(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(append([]error{err}, s.failures...)...)
}

// distinctUIDs refuses two roles under one uid: ending what is left of
// one would end the other.
func distinctUIDs(ds []Daemon) error {
	seen := map[uint32]string{}
	for _, d := range ds {
		if d.Cred == nil {
			continue
		}
		if other, ok := seen[d.Cred.Uid]; ok {
			return fmt.Errorf("%s and %s would both run as uid %d; each role needs a user of its own", other, d.Name, d.Cred.Uid)
		}
		seen[d.Cred.Uid] = d.Name
	}
	return nil
}

type supervisor struct {
	opts     Options
	mu       *sync.Mutex
	running  map[string]Status
	failures []error // what went wrong past a role's own exit, reported by Run
	logMu    sync.Mutex
}

func (s *supervisor) fail(err error) {
	s.logf("%v", err)
	s.mu.Lock()
	s.failures = append(s.failures, err)
	s.mu.Unlock()
}

func (s *supervisor) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.opts.Log, "up: "+format+"\n", args...)
}

// keep runs d until ctx ends, restarting it when it dies. The first start's
// outcome goes to started.
func (s *supervisor) keep(ctx context.Context, d Daemon, started chan<- error) error {
	backoff := 250 * time.Millisecond
	var recent []time.Time
	first := true
	for {
		since := time.Now()
		var readyErr error
		err := s.runOnce(ctx, d, func(e error) {
			readyErr = e
			if first {
				started <- e
			}
		})
		if first {
			first = false
			if readyErr != nil {
				return readyErr
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(since) > s.opts.Window {
			backoff, recent = 250*time.Millisecond, nil
		}
		recent = append(recent, time.Now())
		if len(recent) > s.opts.MaxRestarts {
			return fmt.Errorf("%s died %d times within %s; giving up (last: %v)", d.Name, len(recent), s.opts.Window, err)
		}
		s.logf("%s exited (%v); restarting in %s", d.Name, err, backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// runOnce starts d, reports through onReady once its sockets answer (or it
// failed to get there), and waits for it to end or ctx to stop it.
func (s *supervisor) runOnce(ctx context.Context, d Daemon, onReady func(error)) error {
	cmd := s.command(d)
	if err := cmd.Start(); err != nil {
		onReady(err)
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.setRunning(d, cmd.Process.Pid)
	defer s.setStopped(d.Name)
	defer s.endRole(d) // before setStopped: the role is stopped when all of it is
	if err := s.awaitSockets(ctx, d, exited); err != nil {
		onReady(fmt.Errorf("%s did not start: %w", d.Name, err))
		stop(cmd, exited)
		return err
	}
	s.logf("%s running, pid %d", d.Name, cmd.Process.Pid)
	onReady(nil)
	select {
	case err := <-exited:
		return exitError(err)
	case <-ctx.Done():
		stop(cmd, exited)
		s.logf("%s stopped", d.Name)
		return nil
	}
}

func (s *supervisor) command(d Daemon) *exec.Cmd {
	cmd := &exec.Cmd{Path: s.opts.Executable, Args: append([]string{d.Name}, d.Args...), Env: d.Env}
	out := &prefixWriter{mu: &s.logMu, out: s.opts.Log, prefix: []byte(d.Name + ": ")}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a stop reaches whatever it started; and it
	// dies with us rather than outlive the supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: d.Cred}
	// A child that left the group may hold the role's stdout open; Wait
	// then returns this long after the role itself exited, and endRole
	// ends that child.
	cmd.WaitDelay = time.Second
	return cmd
}

// awaitSockets waits until each of d's sockets exists. A role creates its
// socket with bind and listens right after; dialing it instead would make
// the role log a refused peer, since up is not one of its clients.
func (s *supervisor) awaitSockets(ctx context.Context, d Daemon, exited chan error) error {
	deadline := time.Now().Add(s.opts.StartWait)
	for _, path := range d.Sockets {
		for {
			if fi, err := os.Stat(path); err == nil && fi.Mode().Type() == os.ModeSocket {
				break
			}
			select {
			case err := <-exited:
				exited <- err
				return fmt.Errorf("exited: %v", exitError(err))
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(25 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not answer within %s", path, s.opts.StartWait)
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

func (s *supervisor) setRunning(d Daemon, pid int) {
	uid := uint32(os.Getuid())
	if d.Cred != nil {
		uid = d.Cred.Uid
	}
	s.mu.Lock()
	s.running[d.Name] = Status{Role: d.Name, PID: pid, UID: uid, Sockets: d.Sockets}
	s.mu.Unlock()
	s.changed()
}

func (s *supervisor) setStopped(name string) {
	s.mu.Lock()
	delete(s.running, name)
	s.mu.Unlock()
	s.changed()
}

func (s *supervisor) changed() {
	if s.opts.OnChange == nil {
		return
	}
	s.mu.Lock()
	var list []Status
	for _, d := range s.opts.Daemons {
		if st, ok := s.running[d.Name]; ok {
			list = append(list, st)
		}
	}
	s.mu.Unlock()
	s.opts.OnChange(list)
}

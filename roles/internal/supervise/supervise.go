package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	Sockets []string            // what it listens on: it is ready when each does
}

// Options is what Run needs.
type Options struct {
	Executable string // the boxmaker binary, re-executed for each role
	Daemons    []Daemon
	Log        io.Writer
	// A role that dies more than MaxRestarts times within Window is
	// marked failed and tried again every FailedRetry, until a run of it
	// lasts Window; the other roles go on meanwhile.
	MaxRestarts int
	Window      time.Duration
	FailedRetry time.Duration
	StartWait   time.Duration // how long a role may take to listen on its sockets
	// SocketMode is the mode a role gives its socket once it listens (the
	// last step of sock.Listen): a role is ready when its sockets have it.
	// Zero: any socket made by this run of the role will do.
	SocketMode fs.FileMode
	OnChange   func([]Status) // called whenever a role's state changes
	// KillHelper is the command that, run under a role's uid, ends every
	// process of that uid (KillOwnUID behind a hidden command). Each time a
	// role with a uid of its own exits or is stopped, the supervisor runs
	// it, then ends from root whatever is still left. Nil: root alone does
	// it, process by process.
	KillHelper func(uid uint32) KillCommand
	// Start starts a role's process (and the kill helper's); nil:
	// cmd.Start. up as root passes one that starts them in the mount
	// namespace where the roles can reach the binary and the home.
	Start func(*exec.Cmd) error
	Now   func() time.Time // the log's clock; nil: time.Now
}

// The states of a role in Status.
const (
	StateStarting   = "starting"   // started, not yet listening
	StateRunning    = "running"    // listening on its sockets
	StateRestarting = "restarting" // died; started again after a short backoff
	StateFailed     = "failed"     // died too often; tried again at Retry
)

// Status is one role as up sees it.
type Status struct {
	Role    string   `json:"role"`
	State   string   `json:"state"`
	PID     int      `json:"pid"` // 0 when it is not running
	UID     uint32   `json:"uid"`
	Sockets []string `json:"sockets"`
	Reason  string   `json:"reason"` // why it is not running: its last exit and its last line
	Retry   string   `json:"retry"`  // when it is started next (RFC 3339), if it is not running
}

// Run starts the daemons in order, each once the previous one listens, calls
// ready when all do, and supervises them until ctx ends; then it stops them
// all, last started first. A role that dies is restarted on its own, and
// one that keeps dying is marked failed, never the others with it. Run
// returns early only when a role's first start fails.
func Run(ctx context.Context, opts Options, ready func()) error {
	if err := distinctUIDs(opts.Daemons); err != nil {
		return err
	}
	s := newSupervisor(opts)
	var started []*roleRun
	var err error
	for _, d := range opts.Daemons {
		r := s.launch(ctx, d)
		started = append(started, r)
		if err = <-r.started; err != nil {
			break
		}
	}
	if err == nil {
		if ready != nil {
			ready()
		}
		<-ctx.Done()
	}
	// Last started first: a role is stopped while what it uses still runs.
	for i := len(started) - 1; i >= 0; i-- {
		started[i].stop()
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
	log      *lineLog
	mu       sync.Mutex
	states   map[string]Status
	changeMu sync.Mutex // one OnChange at a time, in the order of the changes
	failures []error    // what went wrong past a role's own exit, reported by Run
}

func newSupervisor(opts Options) *supervisor {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &supervisor{opts: opts, log: &lineLog{out: opts.Log, now: now}, states: map[string]Status{}}
}

// roleRun is one role's goroutine: keep, under a context of its own, so
// that roles are stopped one at a time.
type roleRun struct {
	started <-chan error
	cancel  context.CancelFunc
	done    chan struct{}
}

func (s *supervisor) launch(ctx context.Context, d Daemon) *roleRun {
	started := make(chan error, 1)
	roleCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &roleRun{started: started, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		s.keep(roleCtx, d, started)
	}()
	return r
}

func (r *roleRun) stop() {
	r.cancel()
	<-r.done
}

func (s *supervisor) fail(err error) {
	s.logf("%v", err)
	s.mu.Lock()
	s.failures = append(s.failures, err)
	s.mu.Unlock()
}

func (s *supervisor) logf(format string, args ...any) {
	s.log.lines("up", fmt.Sprintf(format, args...))
}

// setState records d's state and tells OnChange.
func (s *supervisor) setState(d Daemon, st Status) {
	st.Role, st.Sockets, st.UID = d.Name, d.Sockets, uint32(os.Getuid())
	if d.Cred != nil {
		st.UID = d.Cred.Uid
	}
	s.mu.Lock()
	s.states[d.Name] = st
	s.mu.Unlock()
	s.changed()
}

func (s *supervisor) forget(name string) {
	s.mu.Lock()
	delete(s.states, name)
	s.mu.Unlock()
	s.changed()
}

func (s *supervisor) changed() {
	if s.opts.OnChange == nil {
		return
	}
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	s.mu.Lock()
	var list []Status
	for _, d := range s.opts.Daemons {
		if st, ok := s.states[d.Name]; ok {
			list = append(list, st)
		}
	}
	s.mu.Unlock()
	s.opts.OnChange(list)
}

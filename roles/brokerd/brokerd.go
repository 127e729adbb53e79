package brokerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sync"
	"time"

	"boxmaker/audit"
	"boxmaker/policy"
	"boxmaker/roles"
	"boxmaker/roles/brokerd/internal/checkpoints"
	"boxmaker/roles/brokerd/internal/handles"
	"boxmaker/roles/brokerd/internal/jobruns"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/roles/brokerd/internal/sessions"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/sock"

	"github.com/urfave/cli/v3"
)

// Command is the brokerd role.
func Command() *cli.Command {
	return roles.DaemonCommand("brokerd", "decide, audit and run tool calls (a daemon)", "",
		func(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
			return Main(ctx, Options{Paths: paths, Log: log.New(cmd.Root().ErrWriter, "brokerd: ", 0)})
		})
}

// Options is what Run needs; zero fields take their defaults.
type Options struct {
	Paths      config.Paths
	Log        *log.Logger
	Clock      func() time.Time // default time.Now
	Executable string           // the boxmaker binary for sandboxes; default this process's
}

// Main serves until ctx ends, or until the audit log cannot be written.
func Main(ctx context.Context, opts Options) error {
	b, err := start(ctx, opts)
	if err != nil {
		return err
	}
	// Deferred calls run last first: the audit log's closing checkpoint is
	// signed before the witness is handed what is left.
	defer b.witness.Flush(2 * time.Second)
	defer b.audit.Close()
	defer b.grantDir.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go b.witness.Run(ctx)
	b.fatal = func(err error) { cancel(err) }
	if err := b.serve(ctx); err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// start checks the sandbox and opens the audit log, then the state.
func start(ctx context.Context, opts Options) (*broker, error) {
	if opts.Log == nil {
		opts.Log = log.New(io.Discard, "", 0)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	cfg, err := config.Load(opts.Paths.Config)
	if err != nil {
		return nil, err
	}
	if opts.Executable == "" {
		if opts.Executable, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if err := checkStatic(opts.Executable); err != nil {
		return nil, err
	}
	caps, err := sandbox.Check(ctx, cfg.Sandbox.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("brokerd cannot sandbox tools here, so it will not start:\n%w", err)
	}
	opts.Log.Printf("sandbox: %s, landlock ABI %d", caps.Bwrap, caps.LandlockABI)
	if !caps.ProcessLimit {
		opts.Log.Print("running as root: the kernel exempts root from the sandbox's process limit; run brokerd as its own user (boxmaker up does)")
	}
	dial, err := dialsOf(opts.Paths)
	if err != nil {
		return nil, err
	}
	b := &broker{cfg: cfg, paths: opts.Paths, dial: dial, log: opts.Log, clock: opts.Clock, approvals: newApprovals(cfg.Broker.MaxPendingApprovals),
		badSeen: map[string]bool{}, grantDir: policy.NewDir(opts.Paths.Grants), gateway: cfg.Gateway != nil,
		secretApprovals: cfg.Gateway != nil && cfg.Gateway.SecretApprovals}
	b.runner = &runner{log: opts.Log, cfg: cfg, paths: opts.Paths, executable: opts.Executable,
		egressSock: dial.egress, slots: make(chan struct{}, cfg.Broker.MaxSandboxes)}
	b.openMCP(opts.Executable)
	if b.sessions, err = sessions.Open(opts.Paths.Join("broker", "sessions")); err != nil {
		return nil, err
	}
	if b.handles, err = handles.Open(opts.Paths.Join("broker", "handles"), cfg.Handles); err != nil {
		return nil, err
	}
	if b.jobRuns, err = jobruns.Open(opts.Paths.Join("broker", "jobs"), opts.Clock()); err != nil {
		return nil, err
	}
	if b.runner.notes, err = notes.Open(opts.Paths.Join("memory"), opts.Paths.Join("broker", "notes"), opts.Clock, opts.Log); err != nil {
		return nil, err
	}
	auditDir := opts.Paths.Join("audit")
	if err := os.MkdirAll(auditDir, 0o700); err != nil {
		return nil, err
	}
	b.witness = checkpoints.NewWitness(dial.witness, opts.Log)
	if b.audit, err = checkpoints.Open(opts.Paths, cfg, auditDir, b.witness, audit.WithClock(opts.Clock), audit.WithLog(b.log.Printf)); err != nil {
		return nil, err
	}
	return b, nil
}

// dials are the sockets brokerd dials, from the role table.
type dials struct {
	egress, witness, gateway, inspect string
}

func dialsOf(p config.Paths) (dials, error) {
	var d dials
	var err error
	for _, s := range []struct {
		to   *string
		role string
	}{{&d.egress, "egressd"}, {&d.witness, "witnessd"}, {&d.gateway, "gatewayd"}, {&d.inspect, "inspectd"}} {
		if *s.to, err = sock.PathOf(p, "brokerd", s.role); err != nil {
			return dials{}, err
		}
	}
	return d, nil
}

// serve listens on loopd's socket and the owner's; what each accepts and
// who may connect come from the role table, what answers from dispatch.go.
func (b *broker) serve(ctx context.Context) error {
	servers := []struct {
		client string
		kinds  sock.Kinds
	}{{"loopd", b.toolKinds()}, {"bxctl", b.adminKinds()}}
	srvs := make([]*sock.Server, len(servers))
	lns := make([]*net.UnixListener, len(servers))
	for i, s := range servers {
		var err error
		if srvs[i], lns[i], err = b.listen(s.client, s.kinds); err != nil {
			for _, ln := range lns[:i] {
				ln.Close()
			}
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i := range srvs {
		wg.Go(func() { errs[i] = srvs[i].Serve(ctx, lns[i]) })
	}
	b.log.Printf("serving %s and %s", lns[0].Addr(), lns[1].Addr())
	wg.Wait()
	return errors.Join(errs...)
}

// listen opens the socket that client dials, with brokerd's bounds and
// kinds to answer.
func (b *broker) listen(client string, kinds sock.Kinds) (*sock.Server, *net.UnixListener, error) {
	srv, ln, err := sock.ListenPair(b.paths, client, "brokerd", b.log)
	if err != nil {
		return nil, nil, err
	}
	// Bounds: a flood of connections or a frame that never ends costs
	// brokerd a bounded number of goroutines and buffers.
	srv.MaxConns = b.cfg.Broker.MaxConnections
	srv.FrameTimeout = b.cfg.Broker.FrameTimeout.D()
	if err := kinds.Route(srv); err != nil {
		ln.Close()
		return nil, nil, err
	}
	return srv, ln, nil
}

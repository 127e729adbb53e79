package loopd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// Command is the loopd role.
func Command() *cli.Command {
	cmd := roles.DaemonCommand("loopd", "run the agent loop: the owner's messages, the model, and tool calls through brokerd (a daemon)", "",
		func(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
			return Main(ctx, Options{Paths: paths, Log: log.New(cmd.Root().ErrWriter, "loopd: ", 0)})
		})
	cmd.Commands = []*cli.Command{verifyDeviceCommand()}
	return cmd
}

// Options is what Run needs; zero fields take their defaults.
type Options struct {
	Paths config.Paths
	Log   *log.Logger
	Clock func() time.Time // default time.Now
	// OpenSessions bounds the sessions kept open between turns; default
	// DefaultOpenSessions.
	OpenSessions int
	// JobTick is the longest the job scheduler sleeps before it reads
	// jobs/ and asks brokerd again; default one minute.
	JobTick time.Duration
}

// loopd is one running loopd.
type loopd struct {
	cfg   config.Loop
	paths config.Paths
	// inspect says which slot is inspect's own, which no session gets
	// (config.Inspect.ReservedSlot): inferproxy refuses it to loopd.
	inspect config.Inspect
	log     *log.Logger
	clock   func() time.Time
	infer   *inferClient
	// inferSock is infer.sock, for the log line that says where the model is.
	inferSock string
	broker    *brokerConns // broker.sock, dialled per turn and bounded
	store     *store

	sched      *scheduler  // scheduled jobs (scheduler.go)
	deliveries *deliveries // job replies for gatewayd (deliveries.go)
}

// Main serves loop.sock for bxctl and gatewayd until ctx ends.
func Main(ctx context.Context, opts Options) error {
	l, err := start(opts)
	if err != nil {
		return err
	}
	defer l.infer.close()
	defer l.store.closeAll()
	// The scheduler's runs end before the sessions close: stop it first.
	ctx, cancel := context.WithCancel(ctx)
	var jobs sync.WaitGroup
	jobs.Go(func() { l.sched.run(ctx) })
	defer jobs.Wait()
	defer cancel()
	return l.serve(ctx)
}

func start(opts Options) (*loopd, error) {
	if opts.Log == nil {
		opts.Log = log.New(io.Discard, "", 0)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.OpenSessions <= 0 {
		opts.OpenSessions = DefaultOpenSessions
	}
	cfg, err := config.Load(opts.Paths.Config)
	if err != nil {
		return nil, err
	}
	if err := cfg.Loop.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Paths.Config, err)
	}
	st, err := openStore(opts.Paths.Join("sessions"), opts.Log, opts.Clock, opts.OpenSessions)
	if err != nil {
		return nil, err
	}
	inferSock, err := sock.PathOf(opts.Paths, "loopd", "inferproxy")
	if err != nil {
		return nil, err
	}
	brokerSock, err := sock.PathOf(opts.Paths, "loopd", "brokerd")
	if err != nil {
		return nil, err
	}
	l := &loopd{
		cfg: cfg.Loop, paths: opts.Paths, inspect: cfg.Inspect, log: opts.Log, clock: opts.Clock, store: st,
		inferSock: inferSock,
		infer:     newInferClient(inferSock),
		broker:    newBrokerConns(brokerSock, cfg.Broker.MaxConnections),
	}
	l.sched, l.deliveries = newScheduler(l, opts.JobTick), newDeliveries(opts.Log.Printf)
	return l, nil
}

// serve listens in every pair loopd is the listener of, each socket with
// the peer check and the kinds the role table gives it.
func (l *loopd) serve(ctx context.Context) error {
	var srvs []*sock.Server
	var lns []*net.UnixListener
	for _, pair := range roles.ListensOn("loopd") {
		srv, ln, err := l.listen(pair)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return err
		}
		srvs, lns = append(srvs, srv), append(lns, ln)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(srvs))
	for i := range srvs {
		wg.Go(func() { errs[i] = srvs[i].Serve(ctx, lns[i]) })
	}
	l.log.Printf("serving %d sockets; the model at %s, brokerd at %s", len(srvs), l.inferSock, l.broker.path)
	wg.Wait()
	return errors.Join(errs...)
}

func (l *loopd) listen(pair roles.Pair) (*sock.Server, *net.UnixListener, error) {
	srv, ln, err := sock.ListenPair(l.paths, pair.Client, pair.Listener, l.log)
	if err != nil {
		return nil, nil, err
	}
	if err := l.kindsFor(pair.Client).Route(srv); err != nil {
		ln.Close()
		return nil, nil, err
	}
	return srv, ln, nil
}

// now is the clock as a log timestamp.
func (l *loopd) now() wire.Timestamp {
	ts, err := wire.TimestampOf(l.clock())
	if err != nil {
		return 0
	}
	return ts
}

package loopd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"path/filepath"
	"slices"
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
	return roles.DaemonCommand("loopd", "run the agent loop: the owner's messages, the model, and tool calls through brokerd (a daemon)", "",
		func(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
			return Run(ctx, Options{Paths: paths, Log: log.New(cmd.Root().ErrWriter, "loopd: ", 0)})
		})
}

// Options is what Run needs; zero fields take their defaults.
type Options struct {
	Paths config.Paths
	Log   *log.Logger
	Clock func() time.Time // default time.Now
	// OpenSessions bounds the sessions kept open between turns; default
	// DefaultOpenSessions.
	OpenSessions int
}

// loopd is one running loopd.
type loopd struct {
	cfg    config.Loop
	paths  config.Paths
	log    *log.Logger
	clock  func() time.Time
	infer  *inferClient
	broker string // broker.sock, dialled per turn
	store  *store
}

// channelKinds is what a client may send on loop.sock, through either pair:
// nothing about approvals, which go from the owner to brokerd only.
var channelKinds = []string{"chat_send", "session_list", "session_log"}

// Run serves loop.sock for bxctl and gatewayd until ctx ends.
func Run(ctx context.Context, opts Options) error {
	l, err := start(opts)
	if err != nil {
		return err
	}
	defer l.infer.close()
	defer l.store.closeAll()
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
	return &loopd{
		cfg: cfg.Loop, paths: opts.Paths, log: opts.Log, clock: opts.Clock, store: st,
		infer:  newInferClient(socketPath(opts.Paths, "loopd", "inferproxy")),
		broker: socketPath(opts.Paths, "loopd", "brokerd"),
	}, nil
}

func socketPath(p config.Paths, client, listener string) string {
	pair, _ := roles.PairOf(client, listener)
	return p.Join("run", pair.Dir(), pair.Socket)
}

// serve listens in every pair loopd is the listener of, each socket with
// its own peer check.
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
	l.log.Printf("serving %d sockets; the model at %s, brokerd at %s", len(srvs), socketPath(l.paths, "loopd", "inferproxy"), l.broker)
	wg.Wait()
	return errors.Join(errs...)
}

func (l *loopd) listen(pair roles.Pair) (*sock.Server, *net.UnixListener, error) {
	uids, err := roles.PeerUIDs(pair.Client)
	if err != nil {
		return nil, nil, err
	}
	path := l.paths.Join("run", pair.Dir(), pair.Socket)
	ln, err := sock.Listen(path)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for %s: %w", pair.Client, err)
	}
	return &sock.Server{
		Name:      fmt.Sprintf("loopd (%s)", filepath.Base(filepath.Dir(path))),
		Accepts:   channelKinds,
		AllowPeer: func(p sock.Peer) bool { return slices.Contains(uids, p.UID) },
		Handle:    l.handlerFor(pair.Client),
		Log:       l.log,
	}, ln, nil
}

// now is the clock as a log timestamp.
func (l *loopd) now() wire.Timestamp {
	ts, err := wire.TimestampOf(l.clock())
	if err != nil {
		return 0
	}
	return ts
}

package inferproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/upstream"

	"github.com/urfave/cli/v3"
)

// Command is the inferproxy role: `boxmaker inferproxy [--home DIR] [--config FILE]`.
func Command() *cli.Command {
	return roles.DaemonCommand("inferproxy", "forward loopd's llama-server requests to the configured upstream",
		"Listens on run/loopd-inferproxy/infer.sock under the home and serves until\n"+
			"SIGINT or SIGTERM. The upstream is [infer] upstream in config.toml, or\n"+
			"$BOXMAKER_UPSTREAM, which wins.",
		runAction)
}

func runAction(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return err
	}
	socket, err := sock.PathOf(paths, "loopd", "inferproxy")
	if err != nil {
		return err
	}
	up, err := upstream.FromConfig(ctx, cfg, paths.Config, "inferproxy", "the replies", 1, cmd.Root().ErrWriter)
	if err != nil {
		return err
	}
	return Main(ctx, Options{Socket: socket, Upstream: up, InspectSlot: cfg.Inspect.Slot})
}

// Options is what inferproxy needs; Main and tests fill it, and a zero
// field takes the default named beside it.
type Options struct {
	Socket    string               // where Main creates infer.sock
	Upstream  string               // http://host:port, optionally with a path prefix; required
	AllowPeer func(sock.Peer) bool // who may connect; nil: loopd's uids (roles.PeerUIDs)
	Log       *log.Logger          // nil: standard error
	// InspectSlot is [inspect] slot: the slot inspectd asks on, which no
	// chat request of loopd's may name (config.Inspect.ReservedSlot). It
	// takes no default: 0 is slot 0, and -1, the key's default, is the
	// server's last.
	InspectSlot int
}

// Main checks the upstream, listens on opts.Socket and serves until ctx
// ends. A bad upstream is an error before the socket exists.
func Main(ctx context.Context, opts Options) error {
	if _, err := upstream.Parse(opts.Upstream); err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	ln, err := sock.Listen(opts.Socket)
	if err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	return Serve(ctx, ln, opts) // which closes ln
}

// shutdownGrace is how long a stopping inferproxy lets replies in flight
// finish before it cuts them.
const shutdownGrace = 5 * time.Second

// Serve answers on ln until ctx ends, then lets replies in flight finish
// for shutdownGrace. It closes ln on every return, as http.Server.Serve
// does: a Serve that cannot start must not leave a socket whose backlog
// takes connections nobody will answer, on which a client waits forever.
func Serve(ctx context.Context, ln *net.UnixListener, opts Options) error {
	defer ln.Close()
	p, err := newProxy(opts)
	if err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	defer p.transport.CloseIdleConnections()
	gate, err := p.gate(ln)
	if err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          p.log,
	}
	stopped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopped)
		grace, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if srv.Shutdown(grace) != nil {
			srv.Close()
		}
	})
	defer stop()
	p.log.Printf("serving on %s, forwarding to %s", ln.Addr(), p.upstream.Redacted())
	err = srv.Serve(gate)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return fmt.Errorf("inferproxy: %w", err)
}

// gate is infer.sock's, from the role table: connections from loopd's
// uids, checked at accept; the routes are ServeHTTP's to check.
func (p *proxy) gate(ln *net.UnixListener) (*sock.Listener, error) {
	gate, err := sock.ListenerFor(ln, "loopd", "inferproxy", refuse, p.log)
	if err != nil {
		return nil, err
	}
	gate.ReplacePeerCheck(p.allowPeer)
	return gate, nil
}

// newProxy fills the defaults of opts.
func newProxy(opts Options) (*proxy, error) {
	up, err := upstream.Parse(opts.Upstream)
	if err != nil {
		return nil, err
	}
	pair, err := sock.PairOf("loopd", "inferproxy")
	if err != nil {
		return nil, err
	}
	p := &proxy{upstream: up, accepts: pair.Accepts, allowPeer: opts.AllowPeer, log: opts.Log, transport: upstream.Transport(),
		inspect: config.Inspect{Slot: opts.InspectSlot}}
	if p.routes, err = p.routesFor(pair.Accepts); err != nil {
		return nil, err
	}
	if p.log == nil {
		p.log = log.New(os.Stderr, "inferproxy: ", 0)
	}
	return p, nil
}

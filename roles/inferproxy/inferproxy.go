package inferproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sock"

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
	if cfg.Infer.Upstream == "" {
		return fmt.Errorf("no upstream llama-server: set [infer] upstream = \"http://host:port\" in %s, or BOXMAKER_UPSTREAM", paths.Config)
	}
	socket, err := sock.PathOf(paths, "loopd", "inferproxy")
	if err != nil {
		return err
	}
	upstream := cfg.Infer.Upstream
	if upstream == config.ScriptedUpstream {
		if upstream, err = serveScriptedModel(ctx); err != nil {
			return err
		}
		fmt.Fprintln(cmd.Root().ErrWriter, "inferproxy: SCRIPTED MODEL: the replies come from a script (roles/internal/llamadouble), not from a language model")
	}
	inspectSocket, err := sock.PathOf(paths, "brokerd", "inferproxy")
	if err != nil {
		return err
	}
	return Main(ctx, Options{Socket: socket, Upstream: upstream, InspectSocket: inspectSocket, InspectSlot: cfg.Inspect.Slot})
}

// Options is what inferproxy needs; Main and tests fill it, and a zero
// field takes the default named beside it.
type Options struct {
	Socket    string               // where Main creates infer.sock
	Upstream  string               // http://host:port, optionally with a path prefix; required
	AllowPeer func(sock.Peer) bool // who may connect; nil: loopd's uids (roles.PeerUIDs)
	Log       *log.Logger          // nil: standard error
	// InspectSocket is where Main creates brokerd's infer.sock for the
	// inspect tool's quarantined questions; "" serves none.
	InspectSocket string
	InspectSlot   int                  // the slot those questions use; -1: the server's last
	InspectPeer   func(sock.Peer) bool // who may ask; nil: brokerd's uids
}

// Main checks the upstream, listens on opts.Socket and serves until ctx
// ends. A bad upstream is an error before the socket exists.
func Main(ctx context.Context, opts Options) error {
	if _, err := parseUpstream(opts.Upstream); err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	ln, err := sock.Listen(opts.Socket)
	if err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	defer ln.Close()
	if opts.InspectSocket == "" {
		return Serve(ctx, ln, opts)
	}
	inspectCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopInspect, err := startInspect(inspectCtx, opts)
	if err != nil {
		return fmt.Errorf("inferproxy: %w", err)
	}
	err = Serve(ctx, ln, opts)
	cancel() // loopd's side has stopped: so does brokerd's
	return errors.Join(err, stopInspect())
}

// startInspect serves brokerd's pair beside loopd's until ctx ends; the
// function it returns waits for that and says why it stopped.
func startInspect(ctx context.Context, opts Options) (func() error, error) {
	lg := opts.Log
	if lg == nil {
		lg = log.New(os.Stderr, "inferproxy: ", 0)
	}
	up, err := parseUpstream(opts.Upstream)
	if err != nil {
		return nil, err
	}
	srv, err := sock.ServerFor("brokerd", "inferproxy", lg)
	if err != nil {
		return nil, err
	}
	if opts.InspectPeer != nil {
		srv.AllowPeer = opts.InspectPeer
	}
	ln, err := sock.Listen(opts.InspectSocket)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		defer ln.Close()
		done <- serveInspect(ctx, ln, srv, newQuarantine(up, opts.InspectSlot, lg))
	}()
	return func() error { return <-done }, nil
}

// shutdownGrace is how long a stopping inferproxy lets replies in flight
// finish before it cuts them.
const shutdownGrace = 5 * time.Second

// Serve answers on ln until ctx ends, then lets replies in flight finish
// for shutdownGrace.
func Serve(ctx context.Context, ln *net.UnixListener, opts Options) error {
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
	if p.allowPeer != nil {
		gate.AllowPeer = p.allowPeer
	}
	return gate, nil
}

// parseUpstream accepts http or https, a host, and at most a path prefix:
// no credentials (they would sit in a config file), no query, no fragment.
func parseUpstream(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("no upstream llama-server: set [infer] upstream = \"http://host:port\", or BOXMAKER_UPSTREAM")
	}
	u, err := url.Parse(raw)
	switch {
	case !strings.Contains(raw, "://"):
		return nil, fmt.Errorf("upstream %q: the scheme must be http or https, as in http://127.0.0.1:8080", raw)
	case err != nil:
		return nil, fmt.Errorf("upstream %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("upstream %q: the scheme must be http or https, as in http://127.0.0.1:8080", raw)
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("upstream %q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("upstream %q: credentials do not belong in the URL", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("upstream %q: a query or fragment means nothing here", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// newProxy fills the defaults of opts.
func newProxy(opts Options) (*proxy, error) {
	up, err := parseUpstream(opts.Upstream)
	if err != nil {
		return nil, err
	}
	pair, err := sock.PairOf("loopd", "inferproxy")
	if err != nil {
		return nil, err
	}
	p := &proxy{upstream: up, routes: pair.Accepts, allowPeer: opts.AllowPeer, log: opts.Log, transport: newTransport()}
	if p.log == nil {
		p.log = log.New(os.Stderr, "inferproxy: ", 0)
	}
	return p, nil
}

// newTransport is inferproxy's own: no proxy from the environment, no
// transparent decompression (which would change the bytes), no HTTP/2, and
// no time limit on a response, since prompt processing on a slow machine
// can take minutes before the first byte; loopd's request decides.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		MaxIdleConns:        32,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
}

// serveScriptedModel starts the double on a loopback port for as long as
// ctx lasts and returns its URL. It answers with the script up gave in
// config.ModelScriptEnv (boxmaker up --model-script), else the default one.
func serveScriptedModel(ctx context.Context) (string, error) {
	script := llamadouble.DefaultScript()
	if text := os.Getenv(config.ModelScriptEnv); text != "" {
		s, err := llamadouble.ParseScript([]byte(text))
		if err != nil {
			return "", fmt.Errorf("the model script (%s): %w", config.ModelScriptEnv, err)
		}
		script = s
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go llamadouble.New(llamadouble.Options{Script: script, MaxRecorded: scriptedRecorded}).Serve(ctx, ln)
	return "http://" + ln.Addr().String(), nil
}

// scriptedRecorded bounds what the scripted model keeps of the requests it
// answered: nothing reads them under up, and keeping them all grew
// inferproxy by every prompt of every turn (issue 14).
const scriptedRecorded = 8

package egressd

import (
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// Command is the egressd role: `boxmaker egressd [--home DIR] [--config FILE]`.
func Command() *cli.Command {
	return roles.DaemonCommand("egressd", "make the web requests of http_fetch and consult calls for brokerd",
		"Listens on run/brokerd-egressd/egress.sock under the home and serves until\n"+
			"SIGINT or SIGTERM. Limits come from [egress] in config.toml.",
		runAction)
}

func runAction(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return err
	}
	socket, err := sock.PathOf(paths, "brokerd", "egressd")
	if err != nil {
		return err
	}
	return Main(ctx, Options{Socket: socket, Limits: cfg.Egress, MCPChannels: cfg.MCP.MaxInstances, MCPCallTime: cfg.Sandbox.WallTime.D()})
}

// Resolver looks names up; *net.Resolver is one. egressd asks it once per
// connection and connects only to what it answered.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options is what egressd needs; Main and tests fill it, and a zero field
// takes the default named beside it.
type Options struct {
	Socket    string               // where Main creates egress.sock
	Limits    config.Egress        // zero: config.Defaults().Egress
	AllowPeer func(sock.Peer) bool // who may connect; nil: brokerd's uids (roles.PeerUIDs)
	Resolver  Resolver             // nil: net.DefaultResolver
	RootCAs   *x509.CertPool       // nil: the system's roots
	Log       *log.Logger          // nil: standard error
	// MCPChannels bounds the remote MCP channels open at once, in slots
	// of their own ([mcp] max_instances: brokerd runs no more instances),
	// so that remote instances never take http_fetch's; zero: the default.
	MCPChannels int
	// MCPCallTime is a remote MCP call's limit ([sandbox] wall_time): a
	// server that answers a POST with JSON sends its head only with the
	// result, so the head may take this long (plus mcpHeadGrace, so that
	// toolkit's own limit, with its clearer sentence, ends it first);
	// [egress] timeout still bounds the connect. Zero: the default.
	MCPCallTime time.Duration

	// beforeConnect runs in the dialer's Control after the checks passed,
	// with the address about to be connected; an error stops the connect.
	// Tests use it to see what would be dialed without sending anything.
	beforeConnect func(netip.AddrPort) error
	// resolveTimeout bounds one name's lookup; zero: defaultResolveTimeout.
	resolveTimeout time.Duration
}

// Main listens on opts.Socket and serves until ctx ends.
func Main(ctx context.Context, opts Options) error {
	ln, err := sock.Listen(opts.Socket)
	if err != nil {
		return fmt.Errorf("egressd: %w", err)
	}
	defer ln.Close()
	return Serve(ctx, ln, opts)
}

// Serve accepts brokerd's connections on ln until ctx ends, then waits for
// the calls in flight, each of which ends within its timeout.
func Serve(ctx context.Context, ln *net.UnixListener, opts Options) error {
	s, err := newServer(opts)
	if err != nil {
		return err
	}
	defer s.calls.Wait()
	gate, err := s.gate(ctx)
	if err != nil {
		return fmt.Errorf("egressd: %w", err)
	}
	s.log.Printf("serving on %s", ln.Addr())
	if err := gate.Serve(ctx, ln); err != nil {
		return fmt.Errorf("egressd: %w", err)
	}
	return nil
}

// gate is egress.sock's, from the role table: egress_open and
// egress_mcp_open frames from brokerd's uids, each with its descriptor,
// answered from kinds.
func (s *server) gate(ctx context.Context) (*sock.Server, error) {
	gate, err := sock.ServerFor("brokerd", "egressd", s.log)
	if err != nil {
		return nil, err
	}
	gate.ReplacePeerCheck(s.allowPeer)
	if err := s.kinds(ctx).Route(gate); err != nil {
		return nil, err
	}
	return gate, nil
}

// kinds is what egress.sock answers, a row per kind the role table lets
// through it. The calls it starts live on ctx, egressd's own, not on the
// request's.
func (s *server) kinds(ctx context.Context) sock.FileKinds {
	return sock.FileKinds{
		"egress_open": func(_ context.Context, _ sock.Peer, e wire.Envelope, f *os.File, reply sock.Replier) error {
			return s.open(ctx, e, f, reply)
		},
		"egress_mcp_open": func(_ context.Context, _ sock.Peer, e wire.Envelope, f *os.File, reply sock.Replier) error {
			open, ok := e.Msg.(wire.EgressMcpOpen)
			if !ok {
				return sock.Refusal{Code: wire.BadMessage, Detail: wire.KindOf(e.Msg) + " is not an egress_mcp_open"}
			}
			return s.openMCP(ctx, open, f, reply) // mcpopen.go
		},
	}
}

// maxCalls bounds the calls in flight, so that a flood of egress_open frames
// cannot exhaust descriptors.
const maxCalls = 64

// server is one running egressd.
type server struct {
	limits         config.Egress
	allowPeer      func(sock.Peer) bool // nil: the table's
	resolver       Resolver
	roots          *x509.CertPool
	log            *log.Logger
	beforeConnect  func(netip.AddrPort) error
	resolveTimeout time.Duration
	slots          chan struct{}
	mcpSlots       chan struct{} // remote MCP channels', apart from slots
	mcpCallTime    time.Duration
	calls          sync.WaitGroup
}

func newServer(opts Options) (*server, error) {
	s := &server{
		limits: opts.Limits, allowPeer: opts.AllowPeer, resolver: opts.Resolver,
		roots: opts.RootCAs, log: opts.Log, beforeConnect: opts.beforeConnect,
		resolveTimeout: cmp.Or(opts.resolveTimeout, defaultResolveTimeout),
		slots:          make(chan struct{}, maxCalls),
		mcpSlots:       make(chan struct{}, cmp.Or(opts.MCPChannels, config.DefaultMCPMaxInstances)),
		mcpCallTime:    cmp.Or(opts.MCPCallTime, config.Defaults().Sandbox.WallTime.D()),
	}
	if s.limits == (config.Egress{}) {
		s.limits = config.Defaults().Egress
	}
	if s.limits.MaxBytes <= 0 || s.limits.Timeout.D() <= 0 || s.limits.MaxRedirects < 0 {
		return nil, fmt.Errorf("egressd: limits %+v: bytes and time must be positive, redirects not negative", s.limits)
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	if s.log == nil {
		s.log = log.New(os.Stderr, "egressd: ", 0)
	}
	return s, nil
}

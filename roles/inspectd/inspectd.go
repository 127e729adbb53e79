package inspectd

import (
	"context"
	"fmt"
	"log"
	"os"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/upstream"

	"github.com/urfave/cli/v3"
)

// Command is the inspectd role: `boxmaker inspectd [--home DIR] [--config FILE]`.
func Command() *cli.Command {
	return roles.DaemonCommand("inspectd", "ask brokerd's quarantined inspect questions of the llama-server (a daemon)",
		"Listens on run/brokerd-inspectd/inspect.sock under the home and serves until\n"+
			"SIGINT or SIGTERM. The upstream is [infer] upstream in config.toml, or\n"+
			"$BOXMAKER_UPSTREAM, which wins; the slot is [inspect] slot.",
		runAction)
}

func runAction(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return err
	}
	socket, err := sock.PathOf(paths, "brokerd", "inspectd")
	if err != nil {
		return err
	}
	// Two slots, as a real server keeping one apart would have: its own
	// double serves nobody else, but the slot rule stays the same.
	up, err := upstream.FromConfig(ctx, cfg, paths.Config, "inspectd", "the answers", 2, cmd.Root().ErrWriter)
	if err != nil {
		return err
	}
	return Main(ctx, Options{Socket: socket, Upstream: up, Slot: cfg.Inspect.Slot,
		Log: log.New(cmd.Root().ErrWriter, "inspectd: ", 0)})
}

// Options is what inspectd needs; Main and tests fill it, and a zero field
// takes the default named beside it.
type Options struct {
	Socket    string               // where Main creates inspect.sock
	Upstream  string               // http://host:port, optionally with a path prefix; required
	Slot      int                  // the slot its questions use; -1: the server's last
	AllowPeer func(sock.Peer) bool // who may ask; nil: brokerd's uids (roles.PeerUIDs)
	Log       *log.Logger          // nil: standard error
}

// Main checks the upstream, listens on opts.Socket and answers brokerd's
// questions until ctx ends. A bad upstream is an error before the socket
// exists.
func Main(ctx context.Context, opts Options) error {
	up, err := upstream.Parse(opts.Upstream)
	if err != nil {
		return fmt.Errorf("inspectd: %w", err)
	}
	if opts.Log == nil {
		opts.Log = log.New(os.Stderr, "inspectd: ", 0)
	}
	srv, err := sock.ServerFor("brokerd", "inspectd", opts.Log)
	if err != nil {
		return fmt.Errorf("inspectd: %w", err)
	}
	srv.ReplacePeerCheck(opts.AllowPeer)
	q := newQuarantine(up, opts.Slot, opts.Log)
	if err := q.kinds().Route(srv); err != nil {
		return fmt.Errorf("inspectd: %w", err)
	}
	ln, err := sock.Listen(opts.Socket)
	if err != nil {
		return fmt.Errorf("inspectd: %w", err)
	}
	defer ln.Close()
	opts.Log.Printf("serving on %s, asking %s", ln.Addr(), up.Redacted())
	return srv.Serve(ctx, ln)
}

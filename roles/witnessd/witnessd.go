package witnessd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"boxmaker/audit"
	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// Command is the witnessd role: `boxmaker witnessd [--home DIR] [--config FILE]`.
func Command() *cli.Command {
	return roles.DaemonCommand("witnessd", "keep brokerd's signed audit checkpoints where brokerd cannot rewrite them (a daemon)",
		"Listens on run/brokerd-witnessd/witness.sock under the home and keeps the\n"+
			"checkpoints it takes in witness/. With [gateway] in config.toml it hands the\n"+
			"last checkpoint of each hour to gatewayd for the owner's DM.",
		runAction)
}

func runAction(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return err
	}
	origin, err := audit.LoadOrigin(paths.Home)
	if err != nil {
		return err
	}
	socket, err := sock.PathOf(paths, "brokerd", "witnessd")
	if err != nil {
		return err
	}
	opts := Options{Socket: socket, Dir: paths.Join("witness"), Origin: origin,
		Log: log.New(cmd.Root().ErrWriter, "witnessd: ", 0)}
	if cfg.Gateway != nil {
		if opts.Gateway, err = sock.PathOf(paths, "witnessd", "gatewayd"); err != nil {
			return err
		}
	}
	return Main(ctx, opts)
}

// Options is what witnessd needs; Main and tests fill it.
type Options struct {
	Socket    string               // where Main creates witness.sock
	Dir       string               // witness/: the trusted key and the checkpoints taken
	Origin    string               // the origin line of brokerd's checkpoints (audit.LoadOrigin)
	Gateway   string               // gatewayd's socket for the hourly post; "" for none
	AllowPeer func(sock.Peer) bool // who may connect; nil: brokerd's uids (roles.PeerUIDs)
	Log       *log.Logger          // nil: standard error
	Clock     func() time.Time     // nil: time.Now
	PostEvery time.Duration        // how often it looks for an hour's end; zero: a minute
}

// Main listens on opts.Socket and serves until ctx ends.
func Main(ctx context.Context, opts Options) error {
	ln, err := sock.Listen(opts.Socket)
	if err != nil {
		return fmt.Errorf("witnessd: %w", err)
	}
	defer ln.Close()
	return Serve(ctx, ln, opts)
}

// Serve takes brokerd's checkpoints on ln until ctx ends.
func Serve(ctx context.Context, ln *net.UnixListener, opts Options) error {
	if opts.Log == nil {
		opts.Log = log.New(os.Stderr, "witnessd: ", 0)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Dir == "" || opts.Origin == "" {
		return errors.New("witnessd: no directory or origin")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("witnessd: %w", err)
	}
	if _, err := loadCosigner(opts.Dir, opts.Origin, opts.Clock, opts.Log.Printf); err != nil { // made at the first start
		return err
	}
	w := &witness{store: &store{dir: opts.Dir, origin: opts.Origin, log: opts.Log, clock: opts.Clock}, log: opts.Log}
	if err := w.store.check(); err != nil {
		opts.Log.Printf("cannot tell the newest checkpoint it holds, so it takes none: %v", err)
		return fmt.Errorf("witnessd: %s cannot be read: %w", opts.Dir, err)
	}
	if opts.Gateway != "" {
		p, err := newPoster(opts)
		if err != nil {
			return err
		}
		w.poster = p
		go p.run(ctx, opts.PostEvery)
	}
	gate, err := sock.ServerFor("brokerd", "witnessd", opts.Log)
	if err != nil {
		return fmt.Errorf("witnessd: %w", err)
	}
	gate.ReplacePeerCheck(opts.AllowPeer)
	if err := w.kinds().Route(gate); err != nil {
		return fmt.Errorf("witnessd: %w", err)
	}
	opts.Log.Printf("serving on %s, keeping checkpoints in %s", ln.Addr(), opts.Dir)
	if err := gate.Serve(ctx, ln); err != nil {
		return fmt.Errorf("witnessd: %w", err)
	}
	return nil
}

// kinds is what witness.sock answers: a checkpoint with its consistency
// proof, cosigned or refused; one from before the tree, refused.
func (w *witness) kinds() sock.Kinds {
	return sock.Kinds{
		"checkpoint_add": func(_ context.Context, _ sock.Peer, e wire.Envelope, reply sock.Replier) error {
			return reply(wire.Envelope{Final: true, Msg: w.add(e.Msg.(wire.CheckpointAdd))})
		},
		"checkpoint_submit": func(_ context.Context, _ sock.Peer, _ wire.Envelope, reply sock.Replier) error {
			return reply(wire.Envelope{Final: true, Msg: w.refuseUnproven()})
		},
	}
}

// witness is one running witnessd.
type witness struct {
	store  *store
	poster *poster // nil without [gateway]
	log    *log.Logger
}

// add answers one checkpoint_add, logging every refusal: a refused
// checkpoint is what an attack on the log looks like from here.
func (w *witness) add(req wire.CheckpointAdd) wire.Message {
	cp, took, err := w.store.add(req)
	var r *refusal
	switch {
	case errors.As(err, &r) && r.stale:
		w.log.Printf("brokerd proved from size %d; the witness holds size %d and says so, for a proof from there", req.Old, r.held)
		return wire.CheckpointRefused{Held: r.held, Reason: r.reason}
	case errors.As(err, &r):
		w.log.Printf("REFUSED a checkpoint from brokerd: %s", r.reason)
		return wire.CheckpointRefused{Held: r.held, Reason: r.reason}
	case err != nil:
		w.log.Printf("cannot keep a checkpoint: %v", err)
		return wire.WireError{Code: wire.Internal, Detail: "the witness cannot keep checkpoints: see its log"}
	}
	if took && w.poster != nil {
		w.poster.took(cp)
	}
	return wire.CheckpointCosigned{Size: cp.Seq, Note: cp.Note()}
}

// refuseUnproven answers a checkpoint_submit, the kind from before the
// tree: it carries no consistency proof, so it is refused, and logged.
func (w *witness) refuseUnproven() wire.Message {
	const reason = "a checkpoint without a consistency proof (checkpoint_submit): the witness takes checkpoint_add only"
	w.log.Printf("REFUSED a checkpoint from brokerd: %s", reason)
	return wire.CheckpointRefused{Held: 0, Reason: reason}
}

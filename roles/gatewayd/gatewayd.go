package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/gatewayd/internal/mattermost"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"

	"github.com/urfave/cli/v3"
)

// Command is the gatewayd role: `boxmaker gatewayd [--home DIR] [--config FILE]`.
func Command() *cli.Command {
	return roles.DaemonCommand("gatewayd", "talk to the owner on Mattermost and carry approvals to and from brokerd (a daemon)",
		"Reads [gateway] from config.toml and the bot token from the secrets directory\n"+
			"(or $CREDENTIALS_DIRECTORY), listens on run/brokerd-gatewayd/gateway.sock, dials\n"+
			"run/gatewayd-loopd/loop.sock, and serves until SIGINT or SIGTERM.",
		runAction)
}

func runAction(ctx context.Context, paths config.Paths, cmd *cli.Command) error {
	gw, err := config.LoadGateway(paths.Config)
	if err != nil {
		return err
	}
	if gw == nil {
		return fmt.Errorf("%s has no [gateway] table; gatewayd runs only when it is present", paths.Config)
	}
	token, err := ReadToken(paths.Secrets, gw.TokenSecret)
	if err != nil {
		return err
	}
	return Main(ctx, Options{Paths: paths, Gateway: *gw, Token: token, Log: log.New(cmd.Root().ErrWriter, "gatewayd: ", 0)})
}

// Options is what Run needs; zero fields take the defaults named beside them.
type Options struct {
	Paths   config.Paths   // the home, whose run/ holds the sockets
	Gateway config.Gateway // [gateway]; Run applies Check
	Token   string         // the bot token; Command reads it with ReadToken
	Log     *log.Logger    // nil: discarded

	AllowPeer   func(sock.Peer) bool // who may connect to gateway.sock; nil: brokerd's uids (roles.PeerUIDs)
	WitnessPeer func(sock.Peer) bool // who may connect to the witness's gateway.sock; nil: witnessd's uids
	HTTPClient  *http.Client         // nil: one with a 30 s timeout
	RetryMin    time.Duration        // first delay before a reconnect or a repost; default 1s
	RetryMax    time.Duration        // longest such delay; default 30s
	JobEndWait  time.Duration        // how long a job's reply waits for brokerd's job_ended; default 1m
}

// gateway is one running gatewayd.
type gateway struct {
	cfg      config.Gateway
	mm       *mattermost.Client
	log      *log.Logger
	loopSock string
	retryMin time.Duration
	retryMax time.Duration

	ready chan struct{} // closed once bot and dms are known
	bot   mattermost.User
	dms   map[string]string // direct channel id -> the allowlisted user in it; written before ready

	mu      sync.Mutex
	extraDM map[string]bool // direct channels learnt from events after ready
	ignored map[string]int  // posts ignored, by reason

	mark          atomic.Int64 // the newest create_at seen (server ms): where a backfill starts
	seenPosts     *seenSet
	seenReact     *seenSet
	unanswered    *seenSet // answers that found no approval in their thread
	ignoredMarked *seenSet // integration posts already logged
	chats         *chats
	approvals     *approvals
	jobEnds       *jobEnds       // brokerd's word on ended runs (jobended.go)
	jobEndWait    time.Duration  // how long a job's reply waits for it
	work          sync.WaitGroup // replies and edits in flight
}

// Main serves until ctx ends (nil), or until the server refuses the token or
// gateway.sock fails (an error).
func Main(ctx context.Context, opts Options) error {
	g, err := newGateway(opts)
	if err != nil {
		return err
	}
	gatewaySock, err := sock.PathOf(opts.Paths, "brokerd", "gatewayd")
	if err != nil {
		return err
	}
	ln, err := sock.Listen(gatewaySock)
	if err != nil {
		return fmt.Errorf("gatewayd: %w", err)
	}
	defer ln.Close()
	witnessSock, err := sock.PathOf(opts.Paths, "witnessd", "gatewayd")
	if err != nil {
		return err
	}
	wln, err := sock.Listen(witnessSock)
	if err != nil {
		return fmt.Errorf("gatewayd: %w", err)
	}
	defer wln.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var serving sync.WaitGroup
	var serveErr error
	serving.Go(func() {
		if serveErr = g.serveBroker(ctx, ln, opts.AllowPeer); serveErr != nil {
			serveErr = fmt.Errorf("gatewayd: gateway.sock: %w", serveErr)
			cancel()
		}
	})
	serving.Go(func() {
		if err := g.serveWitness(ctx, wln, opts.WitnessPeer); err != nil {
			g.log.Printf("the witness's gateway.sock: %v", err) // the witness posts again later
		}
	})
	serving.Go(func() { g.followJobs(ctx) })
	err = g.follow(ctx)
	cancel()
	serving.Wait()
	g.chats.wait()
	g.approvals.wait()
	g.work.Wait()
	return errors.Join(err, serveErr)
}

func newGateway(opts Options) (*gateway, error) {
	if err := opts.Gateway.Check(); err != nil {
		return nil, err
	}
	if opts.Token == "" {
		return nil, errors.New("gatewayd: no bot token")
	}
	if opts.Log == nil {
		opts.Log = log.New(io.Discard, "", 0)
	}
	loopSock, err := sock.PathOf(opts.Paths, "gatewayd", "loopd")
	if err != nil {
		return nil, err
	}
	g := &gateway{
		cfg: opts.Gateway, log: opts.Log, loopSock: loopSock,
		mm:       mattermost.New(opts.Gateway.URL, opts.Token, opts.HTTPClient, opts.Log),
		retryMin: cmpOr(opts.RetryMin, time.Second), retryMax: cmpOr(opts.RetryMax, 30*time.Second),
		ready: make(chan struct{}), dms: map[string]string{}, extraDM: map[string]bool{}, ignored: map[string]int{},
		seenPosts: newSeenSet(8192), seenReact: newSeenSet(8192), unanswered: newSeenSet(256), ignoredMarked: newSeenSet(1024),
	}
	g.chats = newChats(g)
	g.jobEnds, g.jobEndWait = newJobEnds(), cmpOr(opts.JobEndWait, defaultJobEndWait)
	g.approvals = newApprovals(g)
	return g, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// follow logs in, learns the direct channels, and follows the event stream.
func (g *gateway) follow(ctx context.Context) error {
	if err := g.login(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	stream := &mattermost.Stream{Client: g.mm, RetryMin: g.retryMin, RetryMax: g.retryMax}
	return stream.Run(ctx, g)
}

// backoff is the delay between tries of one thing.
func (g *gateway) backoff() *mattermost.Backoff {
	return &mattermost.Backoff{Min: g.retryMin, Max: g.retryMax}
}

// login asks who the bot is until the server answers; a refused token is
// an error, anything else is retried.
func (g *gateway) login(ctx context.Context) error {
	bo := g.backoff()
	for {
		me, date, err := g.mm.Me(ctx)
		if err == nil {
			g.bot = me
			g.mark.Store(startMark(date))
			break
		}
		if mattermost.IsStatus(err, http.StatusUnauthorized) {
			return fmt.Errorf("gatewayd: the server refused the bot token (%w)", err)
		}
		g.log.Printf("logging in: %v; retrying", err)
		if bo.Wait(ctx) != nil {
			return ctx.Err()
		}
	}
	if err := g.findDMs(ctx); err != nil {
		return err
	}
	g.log.Printf("logged in to %s as %s (%s); listening in %d channels and direct messages", g.cfg.URL, g.bot.Username, g.bot.ID, len(g.cfg.Channels))
	close(g.ready)
	return nil
}

// findDMs learns the direct channel with each allowlisted user, where a
// backfill reads and where approvals of other sessions go.
func (g *gateway) findDMs(ctx context.Context) error {
	for _, user := range g.cfg.AllowUsers {
		ch, err := retry(ctx, g, "finding the direct channel with "+user, func() (mattermost.Channel, error) {
			return g.mm.DirectChannel(ctx, g.bot.ID, user)
		})
		if mattermost.IsClientError(err) {
			g.log.Printf("allow_users %s: no direct channel (%v); their direct messages will not be read back after an outage", user, err)
			continue
		}
		if err != nil {
			return err
		}
		g.dms[ch.ID] = user
	}
	return nil
}

// startMark is where a backfill before any post was seen starts: the
// server's clock at login, a second early because Date has whole seconds.
func startMark(date time.Time) int64 {
	if date.IsZero() {
		date = time.Now()
	}
	return date.UnixMilli() - 1000
}

// retry calls f until it succeeds, the server refuses the request itself
// (a 4xx other than 429, which the client waits out), or ctx ends.
func retry[T any](ctx context.Context, g *gateway, what string, f func() (T, error)) (T, error) {
	bo := g.backoff()
	for {
		v, err := f()
		if err == nil || mattermost.IsClientError(err) {
			return v, err
		}
		g.log.Printf("%s: %v; retrying", what, err)
		if werr := bo.Wait(ctx); werr != nil {
			return v, werr
		}
	}
}

// ownerDM is the direct channel with the first allow_users entry.
func (g *gateway) ownerDM() string {
	for ch, user := range g.dms {
		if user == g.cfg.AllowUsers[0] {
			return ch
		}
	}
	return ""
}

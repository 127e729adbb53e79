package gatewayd

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/mmdouble"
	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The harness runs gatewayd in-process with its real sockets: the
// Mattermost double over loopback HTTP and WebSocket, a stand-in for loopd
// on run/gatewayd-loopd/loop.sock, and a stand-in for brokerd that dials
// run/brokerd-gatewayd/gateway.sock.
//
// These tests run gatewayd against stand-ins that answer by the wire
// contract. The end-to-end test with the real loopd and brokerd under
// `boxmaker up` is TestStackMattermostApprovalByReaction, beside main.go: a
// role package may not import another role.

// world is one Mattermost double with its cast: the bot, two allowlisted
// people (alice is the owner), a stranger, another bot, and a channel that
// all of them are in.
type world struct {
	mm             *mmdouble.Server
	bot, otherBot  mmdouble.User
	token          string
	alice, bob     mmdouble.User
	mallory        mmdouble.User
	channel, quiet string // quiet: a channel gatewayd is not configured for
}

func newWorld(t *testing.T) *world {
	t.Helper()
	mm := mmdouble.New()
	t.Cleanup(mm.Close)
	w := &world{mm: mm, alice: mm.AddUser("alice"), bob: mm.AddUser("bob"), mallory: mm.AddUser("mallory")}
	w.bot, w.token = mm.AddBot("boxmaker")
	w.otherBot, _ = mm.AddBot("otherbot")
	all := []string{w.bot.ID, w.otherBot.ID, w.alice.ID, w.bob.ID, w.mallory.ID}
	w.channel = mm.AddChannel("boxmaker", all...)
	w.quiet = mm.AddChannel("off-topic", all...)
	return w
}

func (w *world) gatewayConfig() config.Gateway {
	return config.Gateway{URL: w.mm.URL, TokenSecret: "mattermost-bot", Channels: []string{w.channel},
		AllowUsers: []string{w.alice.ID, w.bob.ID}, EditInterval: config.Dur(100 * time.Millisecond)}
}

// home is a fresh home with a short path: socket paths must fit 108 bytes.
func home(t *testing.T) config.Paths {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return config.Paths{Home: dir, Config: filepath.Join(dir, "etc", "config.toml"), Secrets: filepath.Join(dir, "etc", "secrets")}
}

// running is one gatewayd started by start.
type running struct {
	logs *syncbuf.Buffer
	stop func()
}

// start runs gatewayd until the test ends or stop is called; the token must
// never be in its log.
func start(t *testing.T, w *world, paths config.Paths, adjust ...func(*Options)) *running {
	t.Helper()
	r := &running{logs: &syncbuf.Buffer{}}
	opts := Options{Paths: paths, Gateway: w.gatewayConfig(), Token: w.token,
		Log: log.New(r.logs, "", 0), AllowPeer: func(sock.Peer) bool { return true },
		RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond}
	for _, f := range adjust {
		f(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Main(ctx, opts) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if strings.Contains(r.logs.String(), w.token) {
				t.Errorf("the bot token is in the log:\n%s", r.logs)
			}
		})
	}
	t.Cleanup(r.stop)
	poll.Until(t, "gatewayd serves and follows the event stream", func() bool {
		logs := r.logs.String()
		return strings.Contains(logs, "serving ") && strings.Contains(logs, "logged in") && w.mm.Sockets() == 1
	})
	return r
}

// loopStandIn answers chat_send as loopd does by the wire contract: the
// session, a delta, a tool call and its result, another delta, chat_done.
type loopStandIn struct {
	mu    sync.Mutex
	sends []wire.ChatSend
}

func startLoop(t *testing.T, paths config.Paths) *loopStandIn {
	t.Helper()
	l := &loopStandIn{}
	path, _ := sock.PathOf(paths, "gatewayd", "loopd")
	ln, err := sock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &sock.Server{Name: "loopd stand-in", Accepts: []string{"chat_send"}, AllowPeer: func(sock.Peer) bool { return true },
		Log: log.New(io.Discard, "", 0), Handle: l.handle}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

func (l *loopStandIn) handle(ctx context.Context, _ sock.Peer, req wire.Envelope, reply sock.Replier) error {
	send := req.Msg.(wire.ChatSend)
	l.mu.Lock()
	l.sends = append(l.sends, send)
	l.mu.Unlock()
	steps := []wire.Message{
		wire.SessionEvent{Session: *send.Session},
		wire.Delta{Text: "Looking that up. "},
		wire.ToolCallEvent{Call: 1, Tool: "http_fetch", Arguments: `{"url":"https://example.com/"}`},
		wire.ToolResultEvent{Call: 1, Outcome: "result", Detail: "1.2 kB, public"},
		wire.Delta{Text: "It says hello."},
	}
	for _, m := range steps {
		if err := reply(wire.Envelope{Msg: m}); err != nil {
			return err
		}
		time.Sleep(60 * time.Millisecond) // long enough for an edit between steps
	}
	return reply(wire.Envelope{Final: true, Msg: wire.ChatDone{Session: *send.Session, Content: "Looking that up. It says hello."}})
}

func (l *loopStandIn) received() []wire.ChatSend {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]wire.ChatSend(nil), l.sends...)
}

// broker is a stand-in for brokerd: one connection per approval, held open
// until gatewayd decides or the test withdraws it by closing.
type broker struct {
	t    *testing.T
	path string
}

func newBroker(t *testing.T, paths config.Paths) *broker {
	path, _ := sock.PathOf(paths, "brokerd", "gatewayd")
	return &broker{t: t, path: path}
}

// offered is one approval_request in flight.
type offered struct {
	cancel context.CancelFunc
	result chan offerResult
}

type offerResult struct {
	decision wire.ApprovalDecision
	err      error
}

func (b *broker) offer(req wire.ApprovalRequest) *offered {
	b.t.Helper()
	c, err := sock.Dial(b.path)
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &offered{cancel: cancel, result: make(chan offerResult, 1)}
	go func() {
		defer c.Close()
		msg, err := c.Call(ctx, req, nil)
		d, _ := msg.(wire.ApprovalDecision)
		o.result <- offerResult{d, err}
	}()
	b.t.Cleanup(cancel)
	return o
}

// decision waits for gatewayd's answer.
func (o *offered) decision(t *testing.T) wire.ApprovalDecision {
	t.Helper()
	select {
	case r := <-o.result:
		if r.err != nil {
			t.Fatalf("approval_request: %v", r.err)
		}
		return r.decision
	case <-time.After(10 * time.Second):
		t.Fatal("no approval_decision within 10s")
	}
	return wire.ApprovalDecision{}
}

// undecided fails if gatewayd has answered.
func (o *offered) undecided(t *testing.T) {
	t.Helper()
	select {
	case r := <-o.result:
		t.Fatalf("decided when it should not have been: %+v, %v", r.decision, r.err)
	default:
	}
}

func request(t *testing.T, id, session string, expires time.Time) wire.ApprovalRequest {
	t.Helper()
	s, err := wire.ParseSessionID(session)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := wire.TimestampOf(expires)
	if err != nil {
		t.Fatal(err)
	}
	return wire.ApprovalRequest{Approval: id, Session: s, Call: 3, Tool: "http_fetch", Subject: "https://example.com/```\\n",
		Arguments: "{\"url\":\"https://example.com/```\\n\"}", Grant: "fetch-ask", SessionTaint: wire.Private, Expires: ts}
}

// approvalPost waits for the bot's post of approval id.
func (w *world) approvalPost(t *testing.T, id string) mmdouble.Post {
	t.Helper()
	var p mmdouble.Post
	poll.Until(t, "the approval "+id+" is posted", func() bool {
		for _, q := range w.mm.PostsBy(w.bot.ID) {
			if q.Props[approvalProp] == id {
				p = q
				return true
			}
		}
		return false
	})
	return p
}

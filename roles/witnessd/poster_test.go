package witnessd

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// fakeGateway is gatewayd's side of the witnessd-gatewayd pair: it keeps
// what it was asked to post.
type fakeGateway struct {
	path  string
	mu    sync.Mutex
	posts []wire.CheckpointPost
}

func startFakeGateway(t *testing.T) *fakeGateway {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g := &fakeGateway{path: filepath.Join(dir, "gateway.sock")}
	ln, err := sock.Listen(g.path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sock.ServerFor("witnessd", "gatewayd", log.New(os.Stderr, "fake gatewayd: ", 0))
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle = func(_ context.Context, _ sock.Peer, e wire.Envelope, reply sock.Replier) error {
		g.mu.Lock()
		g.posts = append(g.posts, e.Msg.(wire.CheckpointPost))
		g.mu.Unlock()
		return reply(wire.Envelope{Final: true, Msg: wire.CheckpointPosted{Post: "post1"}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

func (g *fakeGateway) seqs() []uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []uint64
	for _, p := range g.posts {
		out = append(out, p.Seq)
	}
	return out
}

// The last checkpoint of each hour goes to gatewayd once: when the next
// hour's first comes, and when an hour ends with nothing after it; a
// restarted witness does not post it again.
func TestLastCheckpointOfEachHourIsPosted(t *testing.T) {
	g := startFakeGateway(t)
	var now atomic.Value
	now.Store(time.Date(2026, 12, 1, 10, 40, 0, 0, time.UTC))
	dir := t.TempDir()
	opts := Options{Dir: dir, Gateway: g.path, Log: log.New(os.Stderr, "", 0), Clock: func() time.Time { return now.Load().(time.Time) }}
	st := &store{dir: dir, origin: testOrigin, log: opts.Log, clock: opts.Clock}
	p, err := newPoster(opts)
	if err != nil {
		t.Fatal(err)
	}
	k := newKey(t)
	var old uint64
	take := func(seq uint64, at string) {
		t.Helper()
		c := k.note(t, seq, 1, at)
		cp, took, err := st.add(wire.CheckpointAdd{Key: k.vkey, Old: old, Proof: proofFrom(t, old, c), Note: c.msg})
		old = seq
		cp.Time = mustTS(t, at) // the test's clock, not the cosignature's
		if err != nil || !took {
			t.Fatalf("submit seq %d: %v %v", seq, took, err)
		}
		p.took(cp)
	}
	ctx := context.Background()
	take(3, "2026-12-01T10:00:00.000Z")
	take(7, "2026-12-01T10:30:00.000Z")
	p.postDue(ctx)
	if got := g.seqs(); len(got) != 0 {
		t.Fatalf("posted %v within the hour", got)
	}
	take(9, "2026-12-01T11:05:00.000Z")
	p.postDue(ctx)
	p.postDue(ctx)
	if got := g.seqs(); len(got) != 1 || got[0] != 7 {
		t.Fatalf("posted %v once the next hour's first came, want seq 7 once", got)
	}
	now.Store(time.Date(2026, 12, 1, 12, 1, 0, 0, time.UTC))
	p.postDue(ctx)
	if got := g.seqs(); len(got) != 2 || got[1] != 9 {
		t.Fatalf("posted %v after 11:00 ended, want seq 7 then 9", got)
	}
	if post := g.posts[1]; post.Time.String() != "2026-12-01T11:05:00.000Z" || post.Note == "" {
		t.Errorf("post %+v lacks its time or note", post)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, postedName)); string(data) != "9\n" {
		t.Errorf("%s = %q, want 9", postedName, data)
	}
	again, err := newPoster(opts)
	if err != nil || again.cur == nil || again.cur.Seq != 9 || again.posted != 9 {
		t.Fatalf("a restarted poster = %+v, %v; want the newest seq 9, posted", again, err)
	}
	again.postDue(ctx)
	if got := g.seqs(); len(got) != 2 {
		t.Fatalf("posted %v after a restart, want nothing more", got)
	}
}

// A running witnessd with a gateway posts by itself.
func TestWitnessdPostsThroughGatewayd(t *testing.T) {
	g := startFakeGateway(t)
	var now atomic.Value
	now.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	h := startWitness(t, Options{Gateway: g.path, PostEvery: 5 * time.Millisecond, Clock: func() time.Time { return now.Load().(time.Time) }})
	k := newKey(t)
	wantWitnessed(t, h.submit(t, k, k.note(t, 3, 1, "2026-12-01T10:00:00.000Z")), 3) // cosigned at 10:00
	now.Store(time.Date(2026, 12, 1, 11, 5, 0, 0, time.UTC))
	poll.Until(t, "the checkpoint of an ended hour is posted", func() bool { return len(g.seqs()) == 1 })
	g.mu.Lock()
	post := g.posts[0]
	g.mu.Unlock()
	if !strings.Contains(post.Note, "\n— test-home/boxmaker-witness ") || !strings.Contains(post.Note, "\n— "+testOrigin+" ") {
		t.Errorf("the post carries no cosigned checkpoint (brokerd's signature and the witness's):\n%s", post.Note)
	}
}

// After the owner's rebase the witness takes the new chain from seq 1: the
// poster starts its hours afresh instead of waiting for the old chain's seq.
func TestPosterStartsAfreshOnANewChain(t *testing.T) {
	p := &poster{posted: 9}
	old := audit.Checkpoint{Seq: 9, Time: mustTS(t, "2026-12-01T10:00:00.000Z")}
	p.took(old)
	p.took(audit.Checkpoint{Seq: 1, Time: mustTS(t, "2026-12-01T10:05:00.000Z")})
	if p.cur == nil || p.cur.Seq != 1 || p.due != nil || p.posted != 0 {
		t.Fatalf("after a lower seq: cur %v, due %v, posted %d; want seq 1 alone", p.cur, p.due, p.posted)
	}
}

func mustTS(t *testing.T, s string) wire.Timestamp {
	t.Helper()
	ts, err := wire.ParseTimestamp(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

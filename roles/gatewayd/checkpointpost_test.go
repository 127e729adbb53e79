package gatewayd

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The witness's gateway.sock serves exactly its row of the role table,
// with the table's peer check: checkpoint_post and nothing else.
func TestWitnessGatewaySockServesItsPair(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	start(t, w, paths, func(o *Options) { o.AllowPeer, o.WitnessPeer = nil, nil })
	path, _ := sock.PathOf(paths, "witnessd", "gatewayd")
	pair, _ := roles.PairOf("witnessd", "gatewayd")
	gateprobe.Frames(t, path, pair)
}

// fixtureCheckpointPost is the wire fixture's checkpoint_post: a real
// signed note of the fixtures' audit chain.
func fixtureCheckpointPost(t *testing.T) wire.CheckpointPost {
	t.Helper()
	data, err := os.ReadFile("../../fixtures/wire/valid/checkpoint_post.json")
	if err != nil {
		t.Fatal(err)
	}
	e, err := wire.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return e.Msg.(wire.CheckpointPost)
}

func postCheckpoint(t *testing.T, path string, req wire.CheckpointPost) (wire.Message, error) {
	t.Helper()
	c, err := sock.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Call(ctx, req, nil)
}

// The witness's checkpoint goes to the owner's direct messages with the
// note as signed, in a code block; a note that could break out of it, or
// whose size line is not its seq, is refused and nothing is posted.
func TestCheckpointIsPostedToTheOwner(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	start(t, w, paths)
	path, _ := sock.PathOf(paths, "witnessd", "gatewayd")
	req := fixtureCheckpointPost(t)
	res, err := postCheckpoint(t, path, req)
	posted, ok := res.(wire.CheckpointPosted)
	if err != nil || !ok {
		t.Fatalf("checkpoint_post answered %#v, %v", res, err)
	}
	p, found := w.mm.Get(posted.Post)
	if !found || p.ChannelID != w.mm.DirectChannel(w.bot.ID, w.alice.ID) {
		t.Fatalf("post %q = %+v, want one in alice's (the owner's) direct messages", posted.Post, p)
	}
	for _, want := range []string{"seq 5", req.Hash.String(), "2026-09-18 12:00 UTC", "```\n" + req.Note + "```"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("the post lacks %q:\n%s", want, p.Message)
		}
	}
	for name, edit := range map[string]func(*wire.CheckpointPost){
		"a backquote":         func(r *wire.CheckpointPost) { r.Note = strings.Replace(r.Note, "\n5\n", "\n5\n```\n", 1) },
		"another seq":         func(r *wire.CheckpointPost) { r.Seq = 6 },
		"a control character": func(r *wire.CheckpointPost) { r.Note = strings.Replace(r.Note, "time", "\x1b[2Jtime", 1) },
		"too long":            func(r *wire.CheckpointPost) { r.Note += strings.Repeat("x", maxCheckpointNote) },
	} {
		bad := req
		edit(&bad)
		if _, err := postCheckpoint(t, path, bad); wire.CodeOf(err) != wire.BadMessage {
			t.Errorf("%s: answered %v, want bad_message", name, err)
		}
	}
	if got := len(w.mm.PostsBy(w.bot.ID)); got != 1 {
		t.Errorf("the bot made %d posts, want the one good checkpoint only", got)
	}
}

package witnessd

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

const testOrigin = "boxmaker audit /test/home"

// key is a checkpoint key as brokerd makes one.
type key struct {
	signer note.Signer
	vkey   string
}

func newKey(t *testing.T) key {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, "boxmaker-audit")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return key{signer: s, vkey: vkey}
}

// note signs a checkpoint of seq whose hash is made of fill, at time at.
func (k key) note(t *testing.T, seq uint64, fill byte, at string) string {
	t.Helper()
	return k.noteOf(t, testOrigin, seq, fill, at)
}

// noteOf signs a checkpoint of another log's origin.
func (k key) noteOf(t *testing.T, origin string, seq uint64, fill byte, at string) string {
	t.Helper()
	ts, err := wire.ParseTimestamp(at)
	if err != nil {
		t.Fatal(err)
	}
	var h wire.Hash32
	h[0], h[31] = fill, byte(seq)
	line, err := audit.SignCheckpoint(audit.Checkpoint{Origin: origin, Seq: seq, Hash: h, Time: ts,
		End: audit.Position{File: "2026-12-01.jsonl", Offset: int64(seq) * 100, Line: int(seq)}}, k.signer)
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	if err := json.Unmarshal(line, &msg); err != nil {
		t.Fatal(err)
	}
	return msg
}

// harness is a witnessd serving on a socket in a temporary directory.
type harness struct {
	dir, path string
	logs      *syncbuf.Buffer
}

func startWitness(t *testing.T, opts Options) *harness {
	t.Helper()
	base, err := os.MkdirTemp("", "witnessd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	h := &harness{dir: filepath.Join(base, "witness"), path: filepath.Join(base, "run", "brokerd-witnessd", "witness.sock"), logs: &syncbuf.Buffer{}}
	ln, err := sock.Listen(h.path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir, opts.Origin, opts.Log = h.dir, testOrigin, log.New(h.logs, "witnessd: ", 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

// submit sends one checkpoint_submit and returns the answer.
func (h *harness) submit(t *testing.T, k key, msg string) wire.Message {
	t.Helper()
	c, err := sock.Dial(h.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Call(ctx, wire.CheckpointSubmit{Key: k.vkey, Note: msg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// held is what the witness's directory holds, read as `audit verify` reads it.
func (h *harness) held(t *testing.T) []audit.Checkpoint {
	t.Helper()
	cps, err := audit.ReadWitness(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

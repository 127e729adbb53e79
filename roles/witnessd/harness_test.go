package witnessd

import (
	"context"
	"encoding/base64"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const testOrigin = "test-home/boxmaker-audit"

type key struct {
	signer note.Signer
	vkey   string
}

func newKey(t *testing.T) key {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return key{signer: s, vkey: vkey}
}

// ckpt is a signed checkpoint of a test log: seq records, record i of the
// log of fill being "record i of fill" (another fill is another log).
type ckpt struct {
	msg  string
	seq  uint64
	fill byte
}

// treeOf is the stored hashes of the log of fill up to n records.
func treeOf(n uint64, fill byte) tlog.HashReaderFunc {
	var hashes []tlog.Hash
	r := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ix))
		for i, x := range ix {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for i := range int64(n) {
		h, _ := tlog.StoredHashes(i, fmt.Appendf(nil, "record %d of %d", i, fill), r)
		hashes = append(hashes, h...)
	}
	return r
}

func (k key) note(t *testing.T, seq uint64, fill byte, at string) ckpt {
	t.Helper()
	return k.noteOf(t, testOrigin, seq, fill, at)
}

func (k key) noteOf(t *testing.T, origin string, seq uint64, fill byte, _ string) ckpt {
	t.Helper()
	root, err := tlog.TreeHash(int64(seq), treeOf(seq, fill))
	if err != nil {
		t.Fatal(err)
	}
	msg, _, err := audit.SignCheckpoint(audit.Checkpoint{Origin: origin, Seq: seq, Root: wire.Hash32(root)}, k.signer)
	if err != nil {
		t.Fatal(err)
	}
	return ckpt{msg: string(msg), seq: seq, fill: fill}
}

// proofFrom is the consistency proof from old records to c's, in c's log.
func proofFrom(t *testing.T, old uint64, c ckpt) []string {
	t.Helper()
	out := []string{}
	if old == 0 || old > c.seq {
		return out
	}
	p, err := tlog.ProveTree(int64(c.seq), int64(old), treeOf(c.seq, c.fill))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range p {
		out = append(out, base64.StdEncoding.EncodeToString(h[:]))
	}
	return out
}

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
	poll.Until(t, "witnessd serves", func() bool { return strings.Contains(h.logs.String(), "serving on") })
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

// submit sends one checkpoint_submit and returns the answer.
// submit sends c with an honest proof from the size the witness holds.
func (h *harness) submit(t *testing.T, k key, c ckpt) wire.Message {
	t.Helper()
	var old uint64
	if held := h.held(t); len(held) > 0 {
		old = held[len(held)-1].Seq
	}
	return h.call(t, wire.CheckpointAdd{Key: k.vkey, Old: old, Proof: proofFrom(t, old, c), Note: c.msg})
}

func (h *harness) call(t *testing.T, m wire.Message) wire.Message {
	t.Helper()
	c, err := sock.Dial(h.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Call(ctx, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (h *harness) held(t *testing.T) []audit.Checkpoint {
	t.Helper()
	cps, err := audit.ReadWitness(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

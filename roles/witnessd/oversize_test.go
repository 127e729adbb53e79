package witnessd

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// padded signs, with k, a checkpoint of seq whose end line carries pad
// bytes of padding: what a compromised brokerd, which holds the key, can
// sign. A parser that stops reading the end line at its last number
// takes it for a checkpoint.
func (k key) padded(t *testing.T, seq uint64, pad int) ckpt {
	t.Helper()
	c := k.note(t, seq, 1, "")
	text := strings.Split(c.msg, "\n\n")[0] + " " + strings.Repeat("x", pad) + "\n"
	msg, err := note.Sign(&note.Note{Text: text}, k.signer)
	if err != nil {
		t.Fatal(err)
	}
	c.msg = string(msg)
	return c
}

// The attack of issue 23, finding 6: a compromised brokerd signs one
// checkpoint padded past the 64 KiB the witness read of its own file's end,
// then offers a rollback and a fork. The padded one is refused and logged
// before it is parsed, witness/ is left as it was, and the rollback and the
// fork are refused against the newest checkpoint the witness still holds.
func TestWitnessRefusesAnOversizeCheckpoint(t *testing.T) {
	k := newKey(t)
	h := startWitness(t, Options{})
	wantWitnessed(t, h.submit(t, k, k.note(t, 9, 1, "2026-12-01T10:01:00.000Z")), 9)
	before, _ := os.ReadFile(filepath.Join(h.dir, audit.CheckpointsName))
	for _, pad := range []int{70 << 10, audit.MaxCheckpointNote} {
		wantRefused(t, h, h.submit(t, k, k.padded(t, 10, pad)), 9, "over the")
	}
	wantRefused(t, h, h.submit(t, k, k.padded(t, 10, 10)), 9, "not a checkpoint correctly signed")
	if after, _ := os.ReadFile(filepath.Join(h.dir, audit.CheckpointsName)); string(after) != string(before) {
		t.Fatalf("a refused checkpoint changed witness/%s", audit.CheckpointsName)
	}
	wantRefused(t, h, h.submit(t, k, k.note(t, 5, 1, "2026-12-01T10:06:00.000Z")), 9, "rollback: size 5")
	wantRefused(t, h, h.submit(t, k, k.note(t, 9, 2, "2026-12-01T10:06:00.000Z")), 9, "fork: size 9")
	wantWitnessed(t, h.submit(t, k, k.note(t, 12, 1, "2026-12-01T10:07:00.000Z")), 12)
}

// A witness/ that holds a line the witness cannot read (one written before
// the bound, or by anyone but witnessd) never makes the witness believe an
// older checkpoint, or none, is its newest: it takes nothing, neither a
// rollback nor anything else, and says why; it does not start on it.
func TestWitnessWithAnUnreadableCopyTakesNothing(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	var data []byte
	for _, msg := range []string{k.note(t, 9, 1, "2026-12-01T10:01:00.000Z").msg, k.padded(t, 20, 70<<10).msg} {
		line, err := jsonLine(msg)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, line...)
	}
	writeWitness(t, dir, k, data)
	logs := &syncbuf.Buffer{}
	st := &store{dir: dir, origin: testOrigin, log: log.New(logs, "", 0), clock: time.Now}
	for _, seq := range []uint64{5, 21} {
		c := k.note(t, seq, 1, "")
		if _, took, err := st.add(wire.CheckpointAdd{Key: k.vkey, Old: 9, Proof: proofFrom(t, 9, c), Note: c.msg}); took || err == nil {
			t.Errorf("seq %d over an unreadable witness/: took %v, %v; want an error", seq, took, err)
		} else if !strings.Contains(err.Error(), "over the") {
			t.Errorf("seq %d: %v, want it to say the line is over the bound", seq, err)
		}
	}
	if err := st.check(); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("the start check: %v, want the oversize line named", err)
	}
	ln, err := sock.Listen(filepath.Join(t.TempDir(), "witness.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // a Serve that serves returns nil then
	defer cancel()
	err = Serve(ctx, ln, Options{Dir: dir, Origin: testOrigin, Log: log.New(logs, "", 0)})
	if err == nil || !strings.Contains(logs.String(), "so it takes none") {
		t.Errorf("Serve on an unreadable witness/: %v, log %q; want it refused and logged", err, logs)
	}
}

func jsonLine(msg string) ([]byte, error) {
	// audit.CheckpointLine refuses an oversize note; the file an attacker
	// or an older witnessd wrote need not have.
	b, err := json.Marshal(msg)
	return append(b, '\n'), err
}

func writeWitness(t *testing.T, dir string, k key, checkpoints []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, audit.WitnessKeyName), []byte(k.vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, audit.CheckpointsName), checkpoints, 0o640); err != nil {
		t.Fatal(err)
	}
}

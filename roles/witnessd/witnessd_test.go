package witnessd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/audit"
	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// witness.sock serves exactly its row of the role table, with the table's
// peer check: every other kind is refused at the gate.
func TestWitnessSockServesItsPair(t *testing.T) {
	h := startWitness(t, Options{})
	pair, _ := roles.PairOf("brokerd", "witnessd")
	gateprobe.Frames(t, h.path, pair)
}

func wantWitnessed(t *testing.T, res wire.Message, seq uint64) {
	t.Helper()
	if w, ok := res.(wire.CheckpointWitnessed); !ok || w.Seq != seq {
		t.Fatalf("answer %#v, want checkpoint_witnessed of seq %d", res, seq)
	}
}

func wantRefused(t *testing.T, h *harness, res wire.Message, held uint64, why string) {
	t.Helper()
	r, ok := res.(wire.CheckpointRefused)
	if !ok || r.Held != held || !strings.Contains(r.Reason, why) {
		t.Fatalf("answer %#v, want checkpoint_refused holding seq %d saying %q", res, held, why)
	}
	if !strings.Contains(h.logs.String(), "REFUSED a checkpoint from brokerd: "+r.Reason) {
		t.Errorf("the refusal is not in the log:\n%s", h.logs)
	}
}

// The witness takes checkpoints that extend what it holds, keeps each
// durably in witness/, and takes the one it holds again without a new line.
func TestWitnessTakesCheckpointsThatExtend(t *testing.T) {
	h := startWitness(t, Options{})
	k := newKey(t)
	wantWitnessed(t, h.submit(t, k, k.note(t, 3, 1, "2026-12-01T10:00:00.000Z")), 3)
	wantWitnessed(t, h.submit(t, k, k.note(t, 9, 1, "2026-12-01T10:01:00.000Z")), 9)
	wantWitnessed(t, h.submit(t, k, k.note(t, 9, 1, "2026-12-01T10:01:00.000Z")), 9)
	held := h.held(t)
	if len(held) != 2 || held[0].Seq != 3 || held[1].Seq != 9 || !held[1].Witnessed {
		t.Fatalf("witness/ holds %v, want seq 3 and 9", held)
	}
	if key, _ := os.ReadFile(filepath.Join(h.dir, audit.WitnessKeyName)); string(key) != k.vkey+"\n" {
		t.Errorf("key.pub = %q, want the key trusted on first use %q", key, k.vkey)
	}
	if !strings.Contains(h.logs.String(), "trusting brokerd's checkpoint key "+k.vkey+" on first use") {
		t.Errorf("the first use of the key is not logged:\n%s", h.logs)
	}
}

// Each refusal leaves witness/ as it was: a replayed older checkpoint, the
// same seq with another hash, a wrong signature, another key, another
// log's checkpoint.
func TestWitnessRefuses(t *testing.T) {
	k := newKey(t)
	other := newKey(t)
	for name, c := range map[string]struct {
		key  key
		note func(t *testing.T) string
		why  string
	}{
		"a replayed older checkpoint":    {k, func(t *testing.T) string { return k.note(t, 3, 1, "2026-12-01T10:00:00.000Z") }, "rollback: seq 3"},
		"the same seq with another hash": {k, func(t *testing.T) string { return k.note(t, 9, 2, "2026-12-01T10:01:00.000Z") }, "rollback: seq 9 with hash"},
		"a wrong signature": {k, func(t *testing.T) string {
			msg := k.note(t, 12, 1, "2026-12-01T10:02:00.000Z")
			return strings.Replace(msg, "\n12\n", "\n13\n", 1) // the body no longer matches its signature
		}, "not a checkpoint correctly signed"},
		"signed by another key":                          {other, func(t *testing.T) string { return other.note(t, 12, 1, "2026-12-01T10:02:00.000Z") }, "but the witness trusts " + k.vkey + " only"},
		"the key is right but the note is another key's": {k, func(t *testing.T) string { return other.note(t, 12, 1, "2026-12-01T10:02:00.000Z") }, "not a checkpoint correctly signed"},
		"another log's checkpoint": {k, func(t *testing.T) string {
			return k.noteOf(t, "boxmaker audit /elsewhere", 12, 1, "2026-12-01T10:02:00.000Z")
		}, `of "boxmaker audit /elsewhere", not of this witness's log`},
		"seq 0": {k, func(t *testing.T) string { return k.note(t, 0, 1, "2026-12-01T10:02:00.000Z") }, "seq 0 signs no record"},
	} {
		t.Run(name, func(t *testing.T) {
			h := startWitness(t, Options{})
			wantWitnessed(t, h.submit(t, k, k.note(t, 9, 1, "2026-12-01T10:01:00.000Z")), 9)
			before, _ := os.ReadFile(filepath.Join(h.dir, audit.CheckpointsName))
			wantRefused(t, h, h.submit(t, c.key, c.note(t)), 9, c.why)
			after, _ := os.ReadFile(filepath.Join(h.dir, audit.CheckpointsName))
			if string(before) != string(after) {
				t.Errorf("a refused checkpoint changed witness/%s", audit.CheckpointsName)
			}
			if held := h.held(t); len(held) != 1 || held[0].Seq != 9 {
				t.Errorf("witness/ holds %v after the refusal, want seq 9 alone", held)
			}
		})
	}
}

// A witness restarted on its directory still refuses what it refused: the
// state is on disk, not in memory.
func TestWitnessRemembersAcrossRestarts(t *testing.T) {
	k := newKey(t)
	h := startWitness(t, Options{})
	wantWitnessed(t, h.submit(t, k, k.note(t, 9, 1, "2026-12-01T10:01:00.000Z")), 9)
	h2 := startWitness(t, Options{})
	if err := os.RemoveAll(h2.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(h.dir, h2.dir); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, h2, h2.submit(t, k, k.note(t, 5, 1, "2026-12-01T10:02:00.000Z")), 9, "rollback: seq 5")
	wantRefused(t, h2, h2.submit(t, newKey(t), k.note(t, 12, 1, "2026-12-01T10:02:00.000Z")), 9, "but the witness trusts")
	wantWitnessed(t, h2.submit(t, k, k.note(t, 12, 1, "2026-12-01T10:02:00.000Z")), 12)
}

// A last line cut short by a crash is ended before the next checkpoint,
// which keeps a line of its own.
func TestWitnessEndsATornLine(t *testing.T) {
	k := newKey(t)
	h := startWitness(t, Options{})
	wantWitnessed(t, h.submit(t, k, k.note(t, 3, 1, "2026-12-01T10:00:00.000Z")), 3)
	f, err := os.OpenFile(filepath.Join(h.dir, audit.CheckpointsName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`"boxmaker audit /test/home\n4`)
	f.Close()
	wantWitnessed(t, h.submit(t, k, k.note(t, 5, 1, "2026-12-01T10:01:00.000Z")), 5)
	if held := h.held(t); len(held) != 2 || held[1].Seq != 5 {
		t.Fatalf("witness/ holds %v, want seq 3 and 5", held)
	}
}

// witness.sock answers exactly the kinds the role table lets through it.
func TestEveryWitnessKindHasItsRow(t *testing.T) {
	if err := sock.CheckKinds(sock.Accepted("", "witnessd"), (&witness{}).kinds()); err != nil {
		t.Error(err)
	}
}

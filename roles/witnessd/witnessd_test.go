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

	"golang.org/x/mod/sumdb/note"
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
	w, ok := res.(wire.CheckpointCosigned)
	if !ok || w.Size != seq {
		t.Fatalf("answer %#v, want checkpoint_cosigned of size %d", res, seq)
	}
	if !strings.Contains(w.Note, "\n— test-home/boxmaker-witness ") {
		t.Fatalf("the answer's note carries no cosignature of the witness's key:\n%s", w.Note)
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
	if !strings.Contains(h.logs.String(), "TRUSTING brokerd's checkpoint key "+k.vkey+" on first use") {
		t.Errorf("the first use of the key is not logged:\n%s", h.logs)
	}
	if rec, _ := os.ReadFile(filepath.Join(h.dir, firstUseName)); !strings.Contains(string(rec), k.vkey) {
		t.Errorf("%s = %q, want the first use recorded", firstUseName, rec)
	}
	if held[1].Cosigned.IsZero() {
		t.Errorf("the held checkpoint %+v carries no checked cosignature", held[1])
	}
}

// Each refusal leaves witness/ as it was: a replayed older checkpoint, the
// same seq with another hash, a wrong signature, another key, another
// log's checkpoint.
func TestWitnessRefuses(t *testing.T) {
	k := newKey(t)
	other := newKey(t)
	add := func(old uint64, proof []string, c ckpt) wire.CheckpointAdd {
		return wire.CheckpointAdd{Key: k.vkey, Old: old, Proof: proof, Note: c.msg}
	}
	for name, c := range map[string]struct {
		msg func(t *testing.T) wire.Message
		why string
	}{
		"a replayed older checkpoint": {func(t *testing.T) wire.Message {
			c := k.note(t, 3, 1, "")
			return add(9, []string{}, c)
		}, "rollback: size 3"},
		"the same size with another root": {func(t *testing.T) wire.Message { return add(9, []string{}, k.note(t, 9, 2, "")) }, "fork: size 9"},
		"a rewritten log, its proof honest to it": {func(t *testing.T) wire.Message {
			c := k.note(t, 12, 2, "")
			return add(9, proofFrom(t, 9, c), c)
		}, "no valid consistency proof from size 9 to 12"},
		"no proof": {func(t *testing.T) wire.Message { return add(9, []string{}, k.note(t, 12, 1, "")) }, "no valid consistency proof"},
		"a proof from another size": {func(t *testing.T) wire.Message {
			c := k.note(t, 12, 1, "")
			return add(8, proofFrom(t, 8, c), c)
		}, "the proof starts at size 8, but the witness holds size 9"},
		"a proof too long": {func(t *testing.T) wire.Message {
			c := k.note(t, 12, 1, "")
			return add(9, make([]string, 64), c)
		}, "over the 63 allowed"},
		"no proof kind at all": {func(t *testing.T) wire.Message {
			return wire.CheckpointSubmit{Key: k.vkey, Note: k.note(t, 12, 1, "").msg}
		}, "without a consistency proof"},
		"a wrong signature": {func(t *testing.T) wire.Message {
			c := k.note(t, 12, 1, "")
			c.msg = strings.Replace(c.msg, "\n12\n", "\n13\n", 1) // the body no longer matches its signature
			return add(9, proofFrom(t, 9, c), c)
		}, "not a checkpoint correctly signed"},
		"signed by another key": {func(t *testing.T) wire.Message {
			c := other.note(t, 12, 1, "")
			return wire.CheckpointAdd{Key: other.vkey, Old: 9, Proof: proofFrom(t, 9, c), Note: c.msg}
		}, "but the witness trusts " + k.vkey + " only"},
		"the key is right but the note is another key's": {func(t *testing.T) wire.Message {
			c := other.note(t, 12, 1, "")
			return add(9, proofFrom(t, 9, c), c)
		}, "not a checkpoint correctly signed"},
		"another log's checkpoint": {func(t *testing.T) wire.Message {
			c := k.noteOf(t, "elsewhere/boxmaker-audit", 12, 1, "")
			return add(9, proofFrom(t, 9, c), c)
		}, `of "elsewhere/boxmaker-audit", not of this witness's log`},
		"size 0": {func(t *testing.T) wire.Message { return add(9, []string{}, k.note(t, 0, 1, "")) }, "size 0"},
	} {
		t.Run(name, func(t *testing.T) {
			h := startWitness(t, Options{})
			wantWitnessed(t, h.submit(t, k, k.note(t, 9, 1, "")), 9)
			before, _ := os.ReadFile(filepath.Join(h.dir, audit.CheckpointsName))
			res := h.call(t, c.msg(t))
			held := uint64(9)
			if _, ok := c.msg(t).(wire.CheckpointSubmit); ok {
				held = 0
			}
			if r, ok := res.(wire.CheckpointRefused); ok && strings.Contains(r.Reason, "the proof starts at size") {
				// C2SP's 409: brokerd proves again from the size held, as after
				// each of its restarts; logged, but not as an attack.
				if r.Held != 9 || !strings.Contains(h.logs.String(), "the witness holds size 9 and says so") || strings.Contains(h.logs.String(), "REFUSED") {
					t.Errorf("answer %+v; a proof from another size is logged as an attack, or not at all:\n%s", r, h.logs)
				}
			} else {
				wantRefused(t, h, res, held, c.why)
			}
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
	wantRefused(t, h2, h2.submit(t, k, k.note(t, 5, 1, "2026-12-01T10:02:00.000Z")), 9, "rollback: size 5")
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
	f.WriteString(`"test-home/boxmaker-audit\n4`)
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

// brokerd renames its key when a home takes its origin's name: the same
// Ed25519 key under another name, which the witness takes (and says),
// keeping the old name for the checkpoints it signed.
func TestWitnessTakesBrokerdsKeyRenamed(t *testing.T) {
	skey, vkey, err := note.GenerateKey(nil, "boxmaker-audit")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	old := key{signer: s, vkey: vkey}
	h := startWitness(t, Options{})
	wantWitnessed(t, h.submit(t, old, old.note(t, 3, 1, "")), 3)
	newSkey, newVkey, err := audit.RenameKey(skey, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := note.NewSigner(newSkey)
	renamed := key{signer: ns, vkey: newVkey}
	wantWitnessed(t, h.submit(t, renamed, renamed.note(t, 9, 1, "")), 9)
	if !strings.Contains(h.logs.String(), "brokerd's checkpoint key is now named "+newVkey) {
		t.Errorf("the rename is not said:\n%s", h.logs)
	}
	if held := h.held(t); len(held) != 2 {
		t.Fatalf("witness/ holds %v, want both checkpoints, each checked with its key's name", held)
	}
	impostor := newKey(t) // the new name, another key
	c := impostor.note(t, 12, 1, "")
	wantRefused(t, h, h.call(t, wire.CheckpointAdd{Key: impostor.vkey, Old: 9, Proof: proofFrom(t, 9, c), Note: c.msg}), 9, "but the witness trusts")
}

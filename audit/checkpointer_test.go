package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// checkpointed is a log directory with a key and a mirror outside it, as
// brokerd keeps them.
type checkpointed struct {
	dir string
	cfg CheckpointConfig
}

func newCheckpointed(t *testing.T, records uint64) *checkpointed {
	s, v := testKeys(t)
	return &checkpointed{dir: t.TempDir(), cfg: CheckpointConfig{Signer: s, Verifier: v, Origin: "test/boxmaker-audit",
		Records: records, Interval: time.Hour, Mirror: filepath.Join(t.TempDir(), "checkpoint.last")}}
}

func (c *checkpointed) open(t *testing.T) (*Writer, error) {
	return Open(c.dir, WithCheckpoints(c.cfg), WithClock(fixedClock(t, "2026-12-01T10:00:00.000Z")))
}

func (c *checkpointed) mustOpen(t *testing.T) *Writer {
	t.Helper()
	w, err := c.open(t)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func (c *checkpointed) checkpoints(t *testing.T) []Checkpoint {
	t.Helper()
	cps, err := ReadCheckpoints(c.dir, c.cfg.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

func appendN(t *testing.T, w *Writer, n int) {
	t.Helper()
	for i := range n {
		if _, err := w.Append(sampleRecord(t, wire.CallID(i+1))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckpointsEveryNRecordsAndAtClose(t *testing.T) {
	c := newCheckpointed(t, 3)
	w := c.mustOpen(t)
	appendN(t, w, 4)
	deadline := time.Now().Add(5 * time.Second)
	for len(c.checkpoints(t)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the checkpoint goroutine signs beside the appends
	}
	if cps := c.checkpoints(t); len(cps) == 0 || cps[0].Seq < 3 {
		t.Fatalf("after 4 records with records = 3: %v", cps)
	}
	appendN(t, w, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cps := c.checkpoints(t)
	if last := cps[len(cps)-1]; last.Seq != 5 || last.End.Line != 5 || last.End.File != "2026-12-01.jsonl" {
		t.Fatalf("the clean stop's checkpoint is %v %+v, want seq 5 at line 5", last, last.End)
	}
	if _, err := VerifyAgainst(c.dir, cps); err != nil {
		t.Fatal(err)
	}
}

// A log from before the key is verified in full once and checkpointed at
// Open, before any new record.
func TestLogOlderThanKeyIsCheckpointedAtOpen(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := mustOpen(t, c.dir, WithClock(fixedClock(t, "2026-12-01T10:00:00.000Z")))
	appendN(t, w, 2)
	w.Close()
	c.mustOpen(t)
	if cps := c.checkpoints(t); len(cps) != 1 || cps[0].Seq != 2 {
		t.Fatalf("checkpoints after Open = %v, want one of seq 2", cps)
	}
}

func TestOpenRefusesLogCutShort(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 3)
	w.Close()
	day := filepath.Join(c.dir, "2026-12-01.jsonl")
	data, _ := os.ReadFile(day)
	cut := strings.LastIndexByte(strings.TrimSuffix(string(data), "\n"), '\n') + 1
	if err := os.Truncate(day, int64(cut)); err != nil { // the last record, whole lines only
		t.Fatal(err)
	}
	if _, err := c.open(t); err == nil || !strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("Open of a log cut short = %v, want a refusal saying so and how to recover", err)
	}
	if _, err := VerifyAgainst(c.dir, c.checkpoints(t)); err == nil || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("VerifyAgainst = %v, want records cut off", err)
	}
	if _, err := Verify(c.dir); err != nil {
		t.Fatalf("the chain alone still verifies (%v): this is what checkpoints add", err)
	}
}

// An attacker with the writer's uid rewrites an old record and recomputes
// every hash after it: the chain verifies, the checkpoint does not.
func TestRewrittenChainFailsOnCheckpoint(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 4)
	w.Close()
	day := filepath.Join(c.dir, "2026-12-01.jsonl")
	data, _ := os.ReadFile(day)
	var out []byte
	var prev wire.Hash32
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
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
	}
	if err := os.WriteFile(day, out, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(c.dir); err != nil {
		t.Fatalf("the recomputed chain should verify on its own: %v", err)
	}
	_, err := VerifyAgainst(c.dir, c.checkpoints(t))
	wantVerifyError(t, err, "2026-12-01.jsonl", 4, "rewritten")
	if _, err := c.open(t); err == nil || !strings.Contains(err.Error(), "the log was changed") {
		t.Fatalf("Open of the rewritten log = %v, want a refusal", err)
	}
}

func TestDeletedLogStopsTheWriter(t *testing.T) {
	for name, attack := range map[string]func(t *testing.T, dir string){
		"day file removed": func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "2026-12-01.jsonl")) },
		"directory replaced": func(t *testing.T, dir string) {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"lock removed": func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, lockName)) },
	} {
		t.Run(name, func(t *testing.T) {
			c := newCheckpointed(t, 1000)
			w := c.mustOpen(t)
			appendN(t, w, 1)
			attack(t, c.dir)
			for range 2 {
				r, err := w.Append(sampleRecord(t, 2))
				if !errors.Is(err, ErrReplaced) || r.Seq != 0 || !strings.Contains(err.Error(), "restore") {
					t.Fatalf("Append after the attack = seq %d, %v; want ErrReplaced saying how to recover", r.Seq, err)
				}
			}
		})
	}
}

// Deleting the whole directory while the writer is stopped takes the
// checkpoints with it; the mirror outside it notices.
func TestOpenNoticesDeletedCheckpoints(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 2)
	w.Close()
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		os.Remove(filepath.Join(c.dir, e.Name()))
	}
	if _, err := c.open(t); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("Open after the log and its checkpoints were deleted = %v, want a refusal", err)
	}
}

// A crash after a batch and before its checkpoint loses no record: the next
// Open checks from the last checkpoint through the records after it and
// checkpoints them.
func TestCrashBeforeCheckpointLosesNothing(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 2)
	w.Close()
	w = c.mustOpen(t)
	appendN(t, w, 3)
	crashed := &checkpointed{dir: copyDir(t, c.dir), cfg: c.cfg} // what a kill -9 leaves: no checkpoint of 3 to 5
	if cps := crashed.checkpoints(t); cps[len(cps)-1].Seq != 2 {
		t.Fatalf("the copy already holds a checkpoint of %v", cps[len(cps)-1])
	}
	crashed.mustOpen(t)
	cps := crashed.checkpoints(t)
	res, err := VerifyAgainst(crashed.dir, cps)
	if err != nil || res.Head.Seq != 5 || cps[len(cps)-1].Seq != 5 {
		t.Fatalf("after the crash: %v, %v; checkpoints %v", res, err, cps)
	}
}

package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// logged opens c's log with the Writer's log going to a buffer.
func (c *checkpointed) logged(t *testing.T) (*Writer, *lockedBuffer, error) {
	var buf lockedBuffer
	w, err := Open(c.dir, WithCheckpoints(c.cfg), WithClock(fixedClock(t, "2026-12-01T10:00:00.000Z")),
		WithLog(func(format string, args ...any) {
			buf.Write([]byte(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n"))
		}))
	return w, &buf, err
}

// provesAll checks that every record of the log is proven in the tree
// of its newest checkpoint.
func provesAll(t *testing.T, c *checkpointed) {
	t.Helper()
	cps := c.checkpoints(t)
	newest := cps[len(cps)-1]
	for seq := uint64(1); seq <= newest.Seq; seq++ {
		if _, err := Prove(c.dir, seq, newest); err != nil {
			t.Fatalf("Prove(%d) in the tree of %d: %v", seq, newest.Seq, err)
		}
	}
}

// A crash loses the tree's hashes written since the last checkpoint (they
// are never fsynced before it): Open rebuilds them from the log and says so.
func TestOpenRebuildsTheTreeAfterACrash(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 5)
	w.Close() // a checkpoint of 5
	w = c.mustOpen(t)
	appendN(t, w, 3) // durable in the log, its tree hashes still in memory
	crashed := &checkpointed{dir: copyDir(t, c.dir), cfg: c.cfg}
	crashed.cfg.Mirror = filepath.Join(t.TempDir(), "checkpoint.last")
	mirror, _ := os.ReadFile(c.cfg.Mirror)
	os.WriteFile(crashed.cfg.Mirror, mirror, 0o600)
	w.Close()
	w2, logs, err := crashed.logged(t)
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	if !strings.Contains(logs.String(), "rebuilt the records after seq 5 from the log") {
		t.Errorf("the rebuild is not said:\n%s", logs)
	}
	provesAll(t, crashed)
}

// A tree file cut short, or changed, under the newest checkpoint does not
// give its root: Open builds the whole tree from the log, says why, and the
// checkpoints still prove every record.
func TestOpenRebuildsATreeFileCutOrChanged(t *testing.T) {
	for name, damage := range map[string]func(path string){
		"cut short": func(path string) { os.Truncate(path, 3*tlog.HashSize) },
		"changed where the root is read": func(path string) {
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt([]byte("forged"), tlog.StoredHashIndex(0, 8)*tlog.HashSize)
			f.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCheckpointed(t, 4)
			w := c.mustOpen(t)
			appendN(t, w, 9)
			w.Close()
			damage(filepath.Join(c.dir, TreeName))
			w, logs, err := c.logged(t)
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			if !strings.Contains(logs.String(), "built the Merkle tree of the 9 records from the log") {
				t.Errorf("the rebuild is not said:\n%s", logs)
			}
			provesAll(t, c)
		})
	}
}

// The chain hash beside a checkpoint is not signed; its root is. A record
// rewritten where the newest checkpoint ends, with the chain hash beside
// the checkpoint rewritten to match, is not the last leaf of the tree the
// checkpoint signs: Open refuses.
func TestOpenRefusesTheCheckpointedRecordRewritten(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 4)
	w.Close()
	day := filepath.Join(c.dir, "2026-12-01.jsonl")
	data, _ := os.ReadFile(day)
	forged := strings.Replace(string(data), `"call":4`, `"call":5`, 1)
	if forged == string(data) {
		t.Fatal("no record to change")
	}
	os.WriteFile(day, []byte(forged), 0o640)
	lines := strings.Split(strings.TrimSuffix(forged, "\n"), "\n")
	cpData, _ := os.ReadFile(filepath.Join(c.dir, CheckpointsName))
	var side sideLine
	json.Unmarshal([]byte(strings.TrimSpace(string(cpData))), &side)
	side.Hash = hashOf([]byte(lines[3]))
	line, _ := json.Marshal(side)
	os.WriteFile(filepath.Join(c.dir, CheckpointsName), append(line, '\n'), 0o640)
	os.WriteFile(c.cfg.Mirror, append(line, '\n'), 0o600)
	if _, err := c.open(t); err == nil || !strings.Contains(err.Error(), "not the last leaf of the tree it signs") {
		t.Fatalf("Open = %v, want a refusal: the record is not the tree's", err)
	}
}

// FindRecord finds every record of a log of several files by binary search.
func TestFindRecordFindsEveryRecord(t *testing.T) {
	c := newCheckpointed(t, 1000)
	w := c.mustOpen(t)
	appendN(t, w, 300)
	w.Close()
	for seq := uint64(1); seq <= 300; seq++ {
		line, err := FindRecord(c.dir, seq)
		if err != nil {
			t.Fatalf("FindRecord(%d): %v", seq, err)
		}
		if e, err := parseEntry(line); err != nil || e.seq != seq {
			t.Fatalf("FindRecord(%d) = seq %d, %v", seq, e.seq, err)
		}
	}
	if _, err := FindRecord(c.dir, 301); err == nil {
		t.Fatal("FindRecord finds a record past the head")
	}
}

// lockedBuffer is a log the Writer writes from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

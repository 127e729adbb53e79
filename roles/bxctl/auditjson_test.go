package bxctl

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
)

// TestAuditVerifyJSON: audit verify --json is one object, whole chain or
// from the newest checkpoint, and names the bad file and line when the log
// is wrong, with exit 1.
func TestAuditVerifyJSON(t *testing.T) {
	h := newAuditHome(t, "")
	now := time.Now().Add(-time.Minute)
	h.appendAt(now, 3, true)
	h.appendAt(now.Add(time.Second), 2, true)
	verify := func(args ...string) (int, verifyJSON, string) {
		code, out, errOut := run(t, append([]string{"audit", "verify", "--json"}, args...)...)
		var v verifyJSON
		if err := json.Unmarshal([]byte(out), &v); err != nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("%q: not one line of JSON (%v):\n%s%s", args, err, out, errOut)
		}
		return code, v, out + errOut
	}
	code, v, out := verify("--home", h.paths.Home)
	if code != 0 || !v.OK || v.Records != 5 || v.Head == nil || v.Head.Seq != 5 || v.FromCheckpoint != nil || v.Checkpoints == 0 || v.WitnessCheckpoints != v.Checkpoints {
		t.Errorf("the whole chain: %d\n%s", code, out)
	}
	code, v, out = verify("--from-checkpoint", "--home", h.paths.Home)
	if code != 0 || !v.OK || v.FromCheckpoint == nil || *v.FromCheckpoint != 5 || v.Records != 0 {
		t.Errorf("--from-checkpoint: %d\n%s", code, out)
	}
	code, v, out = verify(fixtures + "/audit/tampered")
	if code != 1 || v.OK || v.Head != nil || v.BadFile != "2026-09-17.jsonl" || v.BadLine != 3 || !strings.Contains(v.Error, "prev") {
		t.Errorf("a tampered log: %d\n%s", code, out)
	}
}

// TestAuditCheckpointsJSON: audit checkpoints --json marks each side's
// checkpoints against the other's, and a witness's past brokerd's newest
// (brokerd's cut off) counts as a difference, with exit 1.
func TestAuditCheckpointsJSON(t *testing.T) {
	h := newAuditHome(t, "")
	now := time.Now().Add(-time.Minute)
	h.appendAt(now, 3, true)
	h.appendAt(now.Add(time.Second), 2, true)
	list := func() (int, checkpointsJSON, string) {
		code, out, errOut := run(t, "audit", "checkpoints", "--json", "--home", h.paths.Home)
		var c checkpointsJSON
		if err := json.Unmarshal([]byte(out), &c); err != nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("not one line of JSON (%v):\n%s%s", err, out, errOut)
		}
		return code, c, out + errOut
	}
	code, c, out := list()
	if code != 0 || c.Differ != 0 || len(c.Brokerd) < 2 || len(c.Witness) != len(c.Brokerd) || c.WitnessTrusts != h.vkey {
		t.Fatalf("agreeing: %d\n%s", code, out)
	}
	for _, row := range append(c.Brokerd, c.Witness...) {
		if !row.Agrees || row.Differs != nil || row.BrokerdHasNone || row.ID == "" || row.Signed == "" {
			t.Errorf("a checkpoint not marked as agreeing: %+v", row)
		}
	}
	if c.Brokerd[0].End == nil || c.Brokerd[0].End.File == "" || c.Witness[0].End != nil {
		t.Errorf("end: brokerd's %+v, the witness's %+v", c.Brokerd[0].End, c.Witness[0].End)
	}
	// brokerd's list cut back to its first checkpoint.
	path := h.paths.Join("audit", audit.CheckpointsName)
	data, _ := os.ReadFile(path)
	first, _, _ := strings.Cut(string(data), "\n")
	if err := os.WriteFile(path, []byte(first+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, c, out = list()
	last := c.Witness[len(c.Witness)-1]
	if code != 1 || c.Differ != len(c.Witness)-1 || len(c.Brokerd) != 1 || !last.BrokerdHasNone || last.Agrees {
		t.Errorf("brokerd's cut off: %d\n%s", code, out)
	}
}

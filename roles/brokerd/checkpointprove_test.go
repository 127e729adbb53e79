package brokerd

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/audit"
	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// `audit checkpoint` prints the newest checkpoint as a signed note with
// brokerd's signature and the witness's cosignature, and `audit prove`
// an inclusion proof against it that checks with x/mod's tlog; a record
// changed in the log has no proof.
func TestAuditCheckpointAndProve(t *testing.T) {
	h := newHome(t, "[audit]\ncheckpoint_records = 2\n", nil)
	h.startWitness()
	h.start()
	h.deniedCalls(5)
	h.stopCleanly()
	poll.Until(t, "the witness holds the clean stop's checkpoint", func() bool { mine, theirs := h.newest(t); return theirs == mine })

	out, err := h.bxctl("audit", "checkpoint")
	if err != nil {
		t.Fatalf("audit checkpoint: %v\n%s", err, out)
	}
	origin, _ := audit.LoadOrigin(h.dir)
	brokerdKeys, _ := audit.ReadVerifierKey(filepath.Join(h.dir, "audit", audit.VerifierKeyName))
	witnessKeys, _ := audit.WitnessKeys(filepath.Join(h.dir, "witness"))
	n, err := note.Open([]byte(out+"\n"), witnessKeys)
	if err != nil || len(n.Sigs) != 2 || !strings.HasPrefix(n.Text, origin+"\n5\n") {
		t.Fatalf("audit checkpoint = %v (%d signatures checked), want the checkpoint of 5 signed by brokerd and cosigned:\n%s", err, len(n.Sigs), out)
	}
	if _, err := note.Open([]byte(out+"\n"), brokerdKeys); err != nil {
		t.Fatalf("brokerd's key does not check the printed note: %v", err)
	}
	root, _ := base64.StdEncoding.DecodeString(strings.Split(n.Text, "\n")[2])

	out, err = h.bxctl("audit", "prove", "3", "--json")
	var p struct {
		Index    int64    `json:"index"`
		Size     int64    `json:"size"`
		Root     string   `json:"root"`
		LeafHash string   `json:"leaf_hash"`
		Proof    []string `json:"proof"`
	}
	if err != nil || json.Unmarshal([]byte(out), &p) != nil || p.Index != 2 || p.Size != 5 || p.Root != base64.StdEncoding.EncodeToString(root) {
		t.Fatalf("audit prove 3 --json = %v\n%s", err, out)
	}
	var proof tlog.RecordProof
	for _, s := range p.Proof {
		b, _ := base64.StdEncoding.DecodeString(s)
		proof = append(proof, tlog.Hash(b))
	}
	leaf, _ := base64.StdEncoding.DecodeString(p.LeafHash)
	if err := tlog.CheckRecord(proof, p.Size, tlog.Hash(root), p.Index, tlog.Hash(leaf)); err != nil {
		t.Fatalf("the printed proof does not check: %v", err)
	}
	if out, err := h.bxctl("audit", "prove", "6"); exitCode(err) == 0 {
		t.Fatalf("audit prove of a record past the checkpoint succeeded:\n%s", out)
	}

	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "2*.jsonl"))
	data, _ := os.ReadFile(files[0])
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = strings.Replace(lines[2], `"tool":"shell"`, `"tool":"shelL"`, 1)
	os.WriteFile(files[0], []byte(strings.Join(lines, "")), 0o640)
	if out, err := h.bxctl("audit", "prove", "3"); exitCode(err) != 1 || !strings.Contains(out, "is not in the tree") {
		t.Fatalf("audit prove of a changed record = %v, want a refusal:\n%s", err, out)
	}
}

// startWitnessLogged is startWitness with the witness's log kept.
func (h *home) startWitnessLogged() *syncbuf.Buffer {
	h.t.Helper()
	wlog := &syncbuf.Buffer{}
	w := exec.Command(boxmakerBinary(h.t), "witnessd", "--home", h.dir)
	w.Stdout, w.Stderr = wlog, wlog
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	poll.Until(h.t, "witnessd serves", func() bool { return strings.Contains(wlog.String(), "serving on") })
	return wlog
}

// An intruder with brokerd's uid rewrites an old record and re-signs
// brokerd's checkpoints (with brokerd's key) to match, tree and all, and
// brokerd starts on it: the next checkpoint it sends the witness has no
// consistency proof from the tree the witness cosigned, and the witness
// refuses it and says so. A log cut short below the witness's size is said
// by brokerd, which the witness's size answers.
func TestTheWitnessRefusesARewrittenLog(t *testing.T) {
	h := newHome(t, "[audit]\ncheckpoint_records = 2\n", nil)
	wlog := h.startWitnessLogged()
	h.start()
	h.deniedCalls(4)
	h.stopCleanly()
	poll.Until(t, "the witness holds the clean stop's checkpoint", func() bool { mine, theirs := h.newest(t); return theirs == mine })

	rewriteAndResign(t, h.dir)
	h.start()
	h.deniedCalls(2)
	h.stopCleanly()
	poll.Until(t, "the witness refuses the rewritten log", func() bool {
		return strings.Contains(wlog.String(), "REFUSED a checkpoint from brokerd: no valid consistency proof from size 4 to")
	})
	if !strings.Contains(h.log.String(), "the audit witness REFUSED a checkpoint") {
		t.Errorf("brokerd does not say the witness refused:\n%s", h.log)
	}
	if _, theirs := h.newest(t); theirs != 4 {
		t.Errorf("the witness holds size %d, want still 4", theirs)
	}
}

func TestBrokerdSaysTheLogIsShorterThanWitnessed(t *testing.T) {
	h := newHome(t, "[audit]\ncheckpoint_records = 2\n", nil)
	h.startWitnessLogged()
	h.start()
	h.deniedCalls(4)
	h.stopCleanly()
	poll.Until(t, "the witness holds seq 4", func() bool { _, theirs := h.newest(t); return theirs == 4 })
	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "2*.jsonl"))
	data, _ := os.ReadFile(files[0])
	lines := strings.SplitAfter(string(data), "\n")
	kept := strings.Join(lines[:2], "")
	os.WriteFile(files[0], []byte(kept), 0o640)
	resign(t, h.dir, files[0], 2, sha256.Sum256([]byte(strings.TrimSuffix(lines[1], "\n"))), int64(len(kept)))
	os.Remove(filepath.Join(h.dir, "audit", audit.TreeName)) // the intruder's tree is rebuilt from the log
	h.start()
	h.deniedCalls(1) // a checkpoint of 3 at the stop, below the witness's 4
	h.stopCleanly()
	if !strings.Contains(h.log.String(), "the audit witness holds a tree of 4 records, more than this checkpoint's 3") {
		t.Errorf("brokerd does not say the log is shorter than witnessed:\n%s", h.log)
	}
}

package brokerd

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/audit"
	"boxmaker/fixtures/poll"

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

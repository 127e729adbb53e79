package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// A home whose checkpoints were signed before the tree (Legacy, of the
// chain's head, with extension lines) migrates at the next Open: the whole
// log is checked against the newest Legacy checkpoint, the tree is built,
// said, and a checkpoint of the tree's form is signed at the head by the
// same key under the origin's name. The Legacy checkpoints stay and verify.
func TestOpenMigratesLegacyCheckpoints(t *testing.T) {
	dir := copyDir(t, filepath.Join(fixtureDir, "chain"))
	legacy, err := os.ReadFile(filepath.Join(checkpointFixtures, CheckpointsName))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, CheckpointsName, string(legacy))
	skey, _ := os.ReadFile(filepath.Join(checkpointFixtures, "fixture.key"))
	oldV, _ := os.ReadFile(filepath.Join(checkpointFixtures, "fixture.pub"))
	const origin = "fixture-home/boxmaker-audit"
	newS, newV, err := RenameKey(strings.TrimSpace(string(skey)), origin)
	if err != nil {
		t.Fatal(err)
	}
	if !SameKey(newV, strings.TrimSpace(string(oldV))) {
		t.Fatalf("the renamed key %s is not the same key as %s", newV, oldV)
	}
	signer, err := note.NewSigner(newS)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ReadVerifierKeyText([]string{newV, strings.TrimSpace(string(oldV))})
	if err != nil {
		t.Fatal(err)
	}
	c := &checkpointed{dir: dir, cfg: CheckpointConfig{Signer: signer, Verifier: v, Origin: origin, Records: 1000, Interval: time.Hour}}
	w, logs, err := c.logged(t)
	if err != nil {
		t.Fatalf("Open of a Legacy home: %v", err)
	}
	w.Close()
	if !strings.Contains(logs.String(), "signed before the tree: migrating") {
		t.Errorf("the migration is not said:\n%s", logs)
	}
	cps := c.checkpoints(t)
	if len(cps) != 3 || !cps[0].Legacy || !cps[1].Legacy || cps[2].Legacy || cps[2].Seq != 5 || cps[2].Origin != origin {
		t.Fatalf("checkpoints after the migration: %+v; want the two Legacy ones, then the tree's of 5", cps)
	}
	if _, err := VerifyAgainst(dir, cps); err != nil {
		t.Fatalf("the Legacy and the new checkpoints do not verify: %v", err)
	}
	if err := CheckCheckpoint(dir, cps[0]); err != nil {
		t.Errorf("the Legacy checkpoint of seq 3: %v", err)
	}
	if _, err := Prove(dir, 2, cps[2]); err != nil {
		t.Errorf("Prove after the migration: %v", err)
	}
	w, logs, err = c.logged(t) // the next start trusts the tree: nothing to say
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if logs.String() != "" {
		t.Errorf("a start after the migration says %q", logs)
	}
}

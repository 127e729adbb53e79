package checkpoints

import (
	"crypto/rand"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/audit"

	"golang.org/x/mod/sumdb/note"
)

const origin = "test" + audit.OriginSuffix

// The key is made at first start, readable by brokerd alone, and the same
// key is read back at the next.
func TestKeyMadeOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker", KeyName)
	first, err := loadKey(path, origin)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	again, err := loadKey(path, origin)
	if err != nil || again.vkey != first.vkey || first.signer.Name() != origin {
		t.Fatalf("second load: %v %q, want the first key %q named %s", err, again.vkey, first.vkey, origin)
	}
}

// A key made before the log had an origin takes the origin's name; its old
// verifier key follows the new one, so that old checkpoints still check.
func TestKeyRenamedToOrigin(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyName)
	skey, vkey, err := note.GenerateKey(rand.Reader, "boxmaker-audit")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(skey+"\n"+vkey+"\n"), 0o600)
	k, err := loadKey(path, origin)
	if err != nil {
		t.Fatal(err)
	}
	if k.signer.Name() != origin || !slices.Equal(k.older, []string{vkey}) || !strings.HasPrefix(k.vkey, origin+"+") {
		t.Fatalf("renamed key: signer %s, vkey %q, older %q", k.signer.Name(), k.vkey, k.older)
	}
	if again, err := loadKey(path, origin); err != nil || !slices.Equal(again.vkeys(), k.vkeys()) {
		t.Fatalf("the renamed key was not stored: %v %q", err, again.vkeys())
	}
}

// A key file whose verifier key is not its signer's is refused, never
// replaced by a new key.
func TestKeyWithAnotherVerifierRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyName)
	skey, _, _ := note.GenerateKey(rand.Reader, origin)
	_, other, _ := note.GenerateKey(rand.Reader, origin)
	body := skey + "\n" + other + "\n"
	os.WriteFile(path, []byte(body), 0o600)
	if _, err := loadKey(path, origin); err == nil || !strings.Contains(err.Error(), "not the signer's") {
		t.Fatalf("loadKey = %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(path); string(data) != body {
		t.Fatal("the refused key file was changed")
	}
}

// While the witness is down the queue keeps the newest maxWitnessQueue
// checkpoints, oldest dropped first, and signing never blocks.
func TestWitnessQueueKeepsTheNewest(t *testing.T) {
	w := NewWitness(filepath.Join(t.TempDir(), "witness.sock"), log.New(io.Discard, "", 0))
	for seq := uint64(1); seq <= maxWitnessQueue+6; seq++ {
		w.signed(audit.Checkpoint{Seq: seq}, "note")
	}
	if len(w.queue) != maxWitnessQueue || w.queue[0].size != 7 || w.newest() != maxWitnessQueue+6 {
		t.Fatalf("queue of %d from %d to %d, want %d from 7", len(w.queue), w.queue[0].size, w.newest(), maxWitnessQueue)
	}
}

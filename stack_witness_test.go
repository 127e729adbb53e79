package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"boxmaker/audit"
	"boxmaker/fixtures/require"

	"golang.org/x/mod/sumdb/note"
)

// Under up as root witnessd runs as its own user, brokerd's user can
// neither write nor read witness/, and the witness, stopped after brokerd,
// holds brokerd's checkpoint of the clean stop: what `audit verify` and
// `audit checkpoints` then check the log against.
func TestStackWitnessKeepsCheckpointsBrokerdCannotWrite(t *testing.T) {
	require.Root(t, "the witness's own uid needs up to run as root")
	s := startStack(t, nil)
	if got := uidName(t, s.pidOf("witnessd")); got != "boxmaker-witness" {
		t.Errorf("witnessd runs as %s, want boxmaker-witness", got)
	}
	witness := filepath.Join(s.home, "witness")
	for _, c := range []struct{ what, script string }{
		{"create a file in witness/", "touch " + filepath.Join(witness, "forged")},
		{"append to the witness's checkpoints", "echo x >> " + filepath.Join(witness, audit.CheckpointsName)},
		{"replace the key the witness trusts", "echo x > " + filepath.Join(witness, audit.WitnessKeyName)},
		{"list witness/", "ls " + witness},
	} {
		cmd := exec.Command("su", "-s", "/bin/sh", "boxmaker-broker", "-c", c.script)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("brokerd's user could %s:\n%s", c.what, out)
		}
	}
	if _, err := os.Stat(filepath.Join(witness, "forged")); err == nil {
		t.Errorf("brokerd's user made a file in witness/")
	}

	hello := s.run("chat", "--message", "hello")
	suggested := regexp.MustCompile(`"(read note [^"]+)"`).FindStringSubmatch(hello)
	if suggested == nil {
		t.Fatalf("the scripted model suggests no note:\n%s", hello)
	}
	s.run("chat", "--message", suggested[1]) // one tool call: one audit record
	s.stop()
	mine, err := audit.ReadCheckpoints(filepath.Join(s.home, "audit"), verifierOf(t, filepath.Join(s.home, "audit", audit.VerifierKeyName)))
	if err != nil || len(mine) == 0 {
		t.Fatalf("brokerd's checkpoints: %v, %v\n%s", mine, err, s.log)
	}
	theirs, err := audit.ReadWitness(witness)
	if err != nil || len(theirs) == 0 || theirs[len(theirs)-1].Seq != mine[len(mine)-1].Seq {
		t.Fatalf("the witness holds %v (%v), want brokerd's newest, %v\n%s", theirs, err, mine[len(mine)-1], s.log)
	}
	out := s.run("audit", "verify")
	if !strings.Contains(out, "matches the witness's") {
		t.Errorf("audit verify does not check the witness's copy:\n%s", out)
	}
	out = s.run("audit", "checkpoints")
	if !strings.Contains(out, "(witnessed)") {
		t.Errorf("audit checkpoints marks none of brokerd's as witnessed:\n%s", out)
	}
}

func verifierOf(t *testing.T, path string) note.Verifier {
	t.Helper()
	v, err := audit.ReadVerifierKey(path)
	if err != nil || v == nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/mmdouble"
	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/wire"

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

func verifierOf(t *testing.T, path string) note.Verifiers {
	t.Helper()
	v, err := audit.ReadVerifierKey(path)
	if err != nil || v == nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// With [gateway], the witness's last checkpoint of an hour that has ended
// reaches the owner's direct messages: the real witnessd and gatewayd
// under up, each under its own uid, the Mattermost double over loopback.
// The witness starts holding a checkpoint of an hour long past (put in
// witness/ before up, with the key it then trusts), as after a night.
func TestStackWitnessPostsTheHourToTheOwner(t *testing.T) {
	mm := mmdouble.New()
	defer mm.Close()
	bot, token := mm.AddBot("boxmaker")
	alice := mm.AddUser("alice")
	channel := mm.AddChannel("town", bot.ID, alice.ID)
	var home string
	startStack(t, nil, func(h string) {
		home = h
		etc := filepath.Join(h, "etc")
		appendFile(t, filepath.Join(etc, "config.toml"), "\n[gateway]\nurl = \""+mm.URL+"\"\nchannels = [\""+channel+"\"]\nallow_users = [\""+alice.ID+"\"]\n")
		if err := os.WriteFile(filepath.Join(etc, "secrets", "mattermost-bot"), []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		origin, err := audit.LoadOrigin(h)
		if err != nil {
			t.Fatal(err)
		}
		seedWitness(t, filepath.Join(h, "witness"), origin)
	})
	dm := mm.DirectChannel(bot.ID, alice.ID)
	var p mmdouble.Post
	if !poll.Holds(60*time.Second, 50*time.Millisecond, func() bool { var ok bool; p, ok = mm.FindPost(bot.ID, "boxmaker audit checkpoint"); return ok }) {
		t.Fatalf("no checkpoint was posted to the owner; home %s", home)
	}
	if p.ChannelID != dm || !strings.Contains(p.Message, "seq 7") || !strings.Contains(p.Message, "2026-01-02 03:00 UTC") {
		t.Fatalf("the checkpoint post is %+v, want seq 7 of 03:00 in alice's DM", p)
	}
}

// seedWitness puts a signed checkpoint of 2026-01-02 03:04 in dir, with
// the key that signed it as the one the witness trusts.
func seedWitness(t *testing.T, dir, origin string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	ts, _ := wire.ParseTimestamp("2026-01-02T03:04:05.000Z")
	_, line, err := audit.SignCheckpoint(audit.Checkpoint{Origin: origin, Seq: 7, Root: wire.Hash32{7}, Hash: wire.Hash32{7}, Time: ts,
		End: audit.Position{File: "2026-01-02.jsonl", Offset: 700, Line: 7}}, signer)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{audit.CheckpointsName: line, audit.WitnessKeyName: []byte(vkey + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

const checkpointFixtures = "../fixtures/audit/checkpoints"

// fixtureKeys returns the fixtures' signer and verifier.
func fixtureKeys(t testing.TB) (note.Signer, note.Verifiers) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(checkpointFixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	s, err := note.NewSigner(read("fixture.key"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(read("fixture.pub"))
	if err != nil {
		t.Fatal(err)
	}
	return s, note.VerifierList(v)
}

// TestCheckpointFixtureIsASignedNote checks the fixture with x/mod's own
// note.Open, not ours: any C2SP tool can check a checkpoint.
func TestCheckpointFixtureIsASignedNote(t *testing.T) {
	_, v := fixtureKeys(t)
	data, err := os.ReadFile(filepath.Join(checkpointFixtures, CheckpointsName))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	want := []string{"3\ny/2Sin", "5\n0zSuURuX"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, line := range lines {
		var msg string
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatal(err)
		}
		n, err := note.Open([]byte(msg), v)
		if err != nil {
			t.Fatalf("line %d: note.Open: %v", i+1, err)
		}
		if !strings.HasPrefix(n.Text, "boxmaker audit fixtures/audit/chain\n"+want[i]) {
			t.Errorf("line %d: text %q", i+1, n.Text)
		}
	}
}

func TestCheckpointFixtureMatchesChain(t *testing.T) {
	_, v := fixtureKeys(t)
	cps, err := ReadCheckpoints(checkpointFixtures, v)
	if err != nil {
		t.Fatal(err)
	}
	chain := filepath.Join(fixtureDir, "chain")
	res, err := VerifyAgainst(chain, cps)
	if err != nil || res.Head.Seq != 5 || res.Head.Hash != cps[1].Hash {
		t.Fatalf("VerifyAgainst = %v, %v", res, err)
	}
	from, err := VerifyFromCheckpoint(chain, cps[0])
	if err != nil || from.Head != res.Head {
		t.Fatalf("VerifyFromCheckpoint = %v, %v; want %v", from, err, res.Head)
	}
}

func TestSignedCheckpointRoundTrips(t *testing.T) {
	s, v := fixtureKeys(t)
	cp := Checkpoint{Origin: "x/boxmaker-audit", Seq: 9, Hash: hashOf([]byte("x")), Time: mustTime(t, "2026-12-01T10:00:00.000Z"),
		End: Position{File: "2026-12-01.jsonl", Offset: 1234, Line: 9}}
	msg, line, err := SignCheckpoint(cp, s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, CheckpointsName, string(line)+`"torn`) // a last line cut short is left out
	cps, err := ReadCheckpoints(dir, v)
	if err != nil || len(cps) != 1 {
		t.Fatalf("ReadCheckpoints = %+v, %v; want %+v", cps, err, cp)
	}
	got := cps[0]
	if got.Note() != string(msg) {
		t.Errorf("Note() = %q, want the note as signed", got.Note())
	}
	if got.note = ""; got != cp {
		t.Fatalf("ReadCheckpoints = %+v, want %+v", got, cp)
	}
}

func TestReadCheckpointsRefuses(t *testing.T) {
	s, v := fixtureKeys(t)
	other, _ := testKeys(t)
	at := mustTime(t, "2026-12-01T10:00:00.000Z")
	sign := func(signer note.Signer, seq uint64, hash string) string {
		_, line, err := SignCheckpoint(Checkpoint{Origin: "o", Seq: seq, Hash: hashOf([]byte(hash)), Time: at, End: Position{File: "2026-12-01.jsonl"}}, signer)
		if err != nil {
			t.Fatal(err)
		}
		return string(line)
	}
	for name, c := range map[string]struct{ text, want string }{
		"backwards":      {sign(s, 5, "a") + sign(s, 4, "b"), "go backwards"},
		"fork":           {sign(s, 5, "a") + sign(s, 5, "b"), "different hashes"},
		"another key":    {sign(s, 5, "a") + sign(other, 6, "b"), "line 2"},
		"edited in body": {strings.Replace(sign(s, 5, "a"), `\n5\n`, `\n6\n`, 1), "line 1"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, CheckpointsName, c.text)
			if _, err := ReadCheckpoints(dir, v); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadCheckpoints = %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func writeFile(t testing.TB, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// testKeys makes a fresh key pair.
func testKeys(t testing.TB) (note.Signer, note.Verifiers) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, "boxmaker-audit-test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, note.VerifierList(v)
}

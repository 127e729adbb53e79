package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// paddedLine is a checkpoints.jsonl line of a checkpoint of seq correctly
// signed by s, whose end line carries pad bytes of padding: what a
// compromised signer can write (issue 23, finding 6). It is made without
// CheckpointLine, which refuses it.
func paddedLine(t *testing.T, s note.Signer, seq uint64, pad int) string {
	t.Helper()
	cp := Checkpoint{Origin: "test/boxmaker-audit", Seq: seq, Hash: hashOf([]byte("x")), Time: mustTime(t, "2026-12-01T10:00:00.000Z"),
		End: Position{File: "2026-12-01.jsonl", Offset: int64(seq) * 100, Line: int(seq)}}
	text, err := cp.body()
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Sign(&note.Note{Text: strings.TrimSuffix(text, "\n") + " " + strings.Repeat("x", pad) + "\n"}, s) // padding after the root
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(string(msg))
	return string(line) + "\n"
}

// Every reader refuses a checkpoint padded past the bound, before parsing
// it, and one padded within it for its end line's padding: ReadCheckpoints
// (audit verify and checkpoints, brokerd's start), NewestCheckpoint (the
// witness, status) and OpenCheckpoint (what the witness is sent).
func TestOversizeCheckpointsAreRefused(t *testing.T) {
	s, v := testKeys(t)
	good := string(signedLine(t, Checkpoint{Origin: "test/boxmaker-audit", Seq: 9, Hash: hashOf([]byte("x")),
		Time: mustTime(t, "2026-12-01T10:00:00.000Z"), End: Position{File: "2026-12-01.jsonl", Offset: 900, Line: 9}}, s))
	for name, c := range map[string]struct{ text, want string }{
		"padded past 64 KiB, newest": {good + paddedLine(t, s, 10, 70<<10), "over the"},
		"padded past the bound":      {good + paddedLine(t, s, 10, MaxCheckpointLine), "over the"},
		"padded within the bound":    {good + paddedLine(t, s, 10, 100), "not 32 bytes of base64"},
		"an oversize torn last line": {good + `"` + strings.Repeat("x", MaxCheckpointLine+1), "over the"},
		"an oversize line that is not JSON": {good + strings.Repeat("x", MaxCheckpointLine+1) + "\n" +
			string(signedLine(t, Checkpoint{Origin: "o", Seq: 10, End: Position{File: "2026-12-01.jsonl"}}, s)), "over the"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, CheckpointsName, c.text)
			if _, err := ReadCheckpoints(dir, v); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ReadCheckpoints = %v, want an error saying %q", err, c.want)
			}
			if got, err := NewestCheckpoint(dir, v); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("NewestCheckpoint = %v, %v; want an error saying %q, never an older one", got, err, c.want)
			}
		})
	}
	var msg string
	json.Unmarshal([]byte(paddedLine(t, s, 10, MaxCheckpointNote)), &msg)
	if _, err := OpenCheckpoint([]byte(msg), v); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("OpenCheckpoint of an oversize note = %v", err)
	}
	if _, err := CheckpointLine(msg); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("CheckpointLine of an oversize note = %v", err)
	}
	if _, err := CheckpointLine(strings.Repeat("<", MaxCheckpointNote)); err == nil {
		t.Error("CheckpointLine made a line over MaxCheckpointLine") // each < is six bytes in JSON
	}
}

// A part of an oversize line at the start of what NewestCheckpoint reads
// is refused too, though whole checkpoints follow it: the file breaks the
// bound, as ReadCheckpoints says of it.
func TestNewestCheckpointRefusesAPartOfAnOversizeLine(t *testing.T) {
	s, v := testKeys(t)
	text := paddedLine(t, s, 8, 70<<10)
	for seq := uint64(9); seq < 12; seq++ {
		text += string(signedLine(t, Checkpoint{Origin: "o", Seq: seq, Hash: hashOf([]byte("x")),
			Time: mustTime(t, "2026-12-01T10:00:00.000Z"), End: Position{File: "2026-12-01.jsonl", Offset: 900, Line: 9}}, s))
	}
	dir := t.TempDir()
	writeFile(t, dir, CheckpointsName, text)
	if got, err := NewestCheckpoint(dir, v); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("NewestCheckpoint = %v, %v; want the oversize line refused", got, err)
	}
}

// signedLine is cp signed by s as a line of brokerd's checkpoints.jsonl.
func signedLine(t *testing.T, cp Checkpoint, s note.Signer) []byte {
	t.Helper()
	_, line, err := SignCheckpoint(cp, s)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

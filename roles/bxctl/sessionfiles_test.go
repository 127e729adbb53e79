package bxctl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// writeEpoch writes a session's epoch file of a start and one user message
// per turn, one second apart from at.
func writeEpoch(t *testing.T, dir, session string, epoch wire.Epoch, at time.Time, turns int, torn string) {
	t.Helper()
	id, _ := wire.ParseSessionID(session)
	ts := func(i int) wire.Timestamp { v, _ := wire.TimestampOf(at.Add(time.Duration(i) * time.Second)); return v }
	recs := []wire.LogRecord{wire.SessionStart{Time: ts(0), Session: id, Epoch: epoch}}
	for i := range turns {
		recs = append(recs, wire.User{Time: ts(i + 1), Content: "hi"})
	}
	var data []byte
	for _, r := range recs {
		line, err := wire.EncodeLogRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(data, line...), '\n')
	}
	if err := os.MkdirAll(filepath.Join(dir, session), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, session, fmt.Sprintf("%d.jsonl", epoch)), append(data, torn...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSessionsWhenLoopdIsDown: sessions and sessions --json read sessions/
// when loopd does not answer, as loopd lists them: created sessions only,
// turns over every epoch, the latest epoch, most recently active first.
func TestSessionsWhenLoopdIsDown(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "sessions")
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	writeEpoch(t, dir, "chat-old", 1, at, 2, "")
	writeEpoch(t, dir, "chat-old", 2, at.Add(time.Minute), 1, `{"type":"user","ti`)
	writeEpoch(t, dir, "chat-new", 1, at.Add(time.Hour), 3, "")
	os.MkdirAll(filepath.Join(dir, "chat-cut-short"), 0o700) // a creation a crash cut short
	code, out, errOut := run(t, "sessions", "--json", "--home", home)
	var list []wire.SessionInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list) != 2 {
		t.Fatalf("sessions --json: %d %v\n%s%s", code, err, out, errOut)
	}
	if list[0].Session.String() != "chat-new" || list[0].Turns != 3 || list[0].Epoch != 1 ||
		list[1].Session.String() != "chat-old" || list[1].Turns != 3 || list[1].Epoch != 2 {
		t.Errorf("sessions --json: %+v", list)
	}
	if !strings.Contains(errOut, "loopd is not answering: read from "+home+"/sessions") {
		t.Errorf("stderr does not say where the list came from: %q", errOut)
	}
	code, out, _ = run(t, "sessions", "--home", home)
	if code != 0 || !strings.HasPrefix(out, "SESSION ") || !strings.Contains(out, "\nchat-new  1      3      2026-12-02T05:00:03.000Z\n") {
		t.Errorf("sessions: %d\n%s", code, out)
	}
}

// TestSessionsFilesFollowNoLink: a compromised loopd plants links and a
// FIFO under sessions/ for a root bxctl to follow; none is followed, none
// blocks, and the listing names what it left out.
func TestSessionsFilesFollowNoLink(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	dir := filepath.Join(home, "sessions")
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	writeEpoch(t, elsewhere, "chat-secret", 1, at, 1, "")
	writeEpoch(t, dir, "chat-real", 1, at, 1, "")
	os.Symlink(filepath.Join(elsewhere, "chat-secret"), filepath.Join(dir, "chat-secret"))
	os.MkdirAll(filepath.Join(dir, "chat-linked"), 0o700)
	os.Symlink(filepath.Join(elsewhere, "chat-secret", "1.jsonl"), filepath.Join(dir, "chat-linked", "1.jsonl"))
	os.MkdirAll(filepath.Join(dir, "chat-fifo"), 0o700)
	if err := syscall.Mkfifo(filepath.Join(dir, "chat-fifo", "1.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "sessions", "--json", "--home", home)
	var list []wire.SessionInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list) != 1 || list[0].Session.String() != "chat-real" {
		t.Errorf("sessions --json: %d %v\n%s%s", code, err, out, errOut)
	}
	for _, s := range []string{"chat-secret", "chat-linked", "chat-fifo"} {
		if !strings.Contains(errOut, "session "+s+" is left out") {
			t.Errorf("stderr does not name %s:\n%s", s, errOut)
		}
	}
	// sessions/ itself a link: refused, not read.
	home2 := t.TempDir()
	os.Symlink(dir, filepath.Join(home2, "sessions"))
	if code, out, errOut := run(t, "sessions", "--home", home2); code != 1 || strings.Contains(out, "chat-real") {
		t.Errorf("sessions/ a link: %d\n%s%s", code, out, errOut)
	}
}

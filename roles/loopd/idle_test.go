package loopd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

// openFiles counts this process's descriptors, and those open on a file
// under dir.
func openFiles(t *testing.T, dir string) (all, under int) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		require.Available(t, "/proc/self/fd", err)
	}
	for _, e := range entries {
		all++
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			under++
		}
	}
	return all, under
}

// TestIdleSessionsAreClosed: a loopd that has served many sessions keeps
// at most its bound of them open (one epoch file each), not one per
// session it ever served.
func TestIdleSessionsAreClosed(t *testing.T) {
	const bound, sessions = 4, 60
	e := newEnv(t, envOptions{script: toolScript, open: bound})
	e.mustChat("", "warm up") // the infer and broker connections exist from here on
	before, _ := openFiles(t, e.home)
	for i := range sessions {
		e.mustChat("", fmt.Sprintf("hello %d", i))
	}
	after, logs := openFiles(t, filepath.Join(e.home, "sessions"))
	if logs > bound {
		t.Errorf("%d session files open after %d sessions, want at most %d", logs, sessions, bound)
	}
	if after-before > bound+20 {
		t.Errorf("descriptors grew from %d to %d over %d sessions", before, after, sessions)
	}
}

// TestClosedSessionResumes: a session closed while idle goes on as after
// a restart: its log continues whole and its history is replayed exactly,
// so the model's prompt begins with what it saw before.
func TestClosedSessionResumes(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, open: 1})
	s := e.mustChat("", "read note todo.md").done.Session.String()
	e.mustChat("", "another session closes the first")
	if _, open := openFiles(t, filepath.Join(e.home, "sessions", s)); open != 0 {
		t.Fatalf("session %s still has %d files open", s, open)
	}
	first := e.chatRequests()[1] // the reply to the tool result
	out := e.mustChat(s, "read note todo.md")
	if got := out.calls(); len(got) != 1 || got[0] != 2 {
		t.Errorf("calls after reopening: %v, want [2]", got)
	}
	reqs := e.chatRequests()
	again := reqs[len(reqs)-2] // the first request of the resumed turn
	if !strings.HasPrefix(again.Prompt, first.Prompt) {
		t.Errorf("the resumed session's prompt does not begin with the one before:\nbefore %q\nnow    %q", first.Prompt, again.Prompt)
	}
	if got := kinds(e.readLog(s, 1)); got != "start user assistant result assistant user assistant result assistant" {
		t.Errorf("log: %s", got)
	}
}

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/mmdouble"
	"boxmaker/fixtures/poll"
)

// The owner talks to boxmaker on Mattermost and approves a fetch with a
// reaction: the real gatewayd, loopd and brokerd under up, the Mattermost
// double over loopback. A stranger's reaction decides nothing; the owner's
// runs the tool, and the audit record names mm:<user id> and the post.
func TestStackMattermostApprovalByReaction(t *testing.T) {
	mm := mmdouble.New()
	defer mm.Close()
	bot, token := mm.AddBot("boxmaker")
	alice, mallory := mm.AddUser("alice"), mm.AddUser("mallory")
	channel := mm.AddChannel("town", bot.ID, alice.ID, mallory.ID)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "Local Page via Mattermost\n")
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	s := startStack(t, map[string]string{
		"fetch-local": "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"http://" + host + "\"]\n",
	}, func(home string) {
		etc := filepath.Join(home, "etc")
		gateway := "\n[gateway]\nurl = \"" + mm.URL + "\"\nchannels = [\"" + channel + "\"]\nallow_users = [\"" + alice.ID + "\"]\nedit_interval = \"100ms\"\n"
		appendFile(t, filepath.Join(etc, "config.toml"), gateway)
		if err := os.WriteFile(filepath.Join(etc, "secrets", "mattermost-bot"), []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	root := mm.Post(alice.ID, channel, "fetch "+page.URL+"/")
	approval := waitForPost(t, s, mm, root.ID, bot.ID, "ap-")
	mm.React(mallory.ID, approval.ID, "+1")
	// gatewayd says when it ignores a reaction, so the check below runs
	// after the reaction was handled, however fast or slow that was.
	ignored := "a reaction from " + mallory.ID + ", who is not in allow_users, ignored"
	if !poll.Holds(60*time.Second, 50*time.Millisecond, func() bool { return strings.Contains(s.log.String(), ignored) }) {
		t.Fatalf("gatewayd never said it ignored the stranger's reaction\n%s", s.log)
	}
	if out := s.run("approvals"); !strings.Contains(out, "http_fetch") {
		t.Fatalf("a stranger's reaction decided the approval:\n%s", out)
	}
	mm.React(alice.ID, approval.ID, "+1")
	waitForPost(t, s, mm, root.ID, bot.ID, "Local Page via Mattermost")
	tail := s.run("audit", "tail", "-n", "1")
	want := `"outcome":"approved","grant":"fetch-local","approver":"mm:` + alice.ID + `","post":"` + approval.ID + `"`
	if !strings.Contains(tail, want) {
		t.Fatalf("audit record %s\nwant %s", tail, want)
	}
	if !strings.Contains(tail, `"session":"mm-`) {
		t.Errorf("the session is not the thread's: %s", tail)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// waitForPost waits for a post by user in the thread of root containing text.
func waitForPost(t *testing.T, s *stack, mm *mmdouble.Server, root, user, text string) mmdouble.Post {
	t.Helper()
	var found mmdouble.Post
	if poll.Holds(60*time.Second, 50*time.Millisecond, func() bool {
		for _, p := range mm.Thread(root) {
			if p.UserID == user && strings.Contains(p.Message, text) {
				found = p
				return true
			}
		}
		return false
	}) {
		return found
	}
	var seen []string
	for _, p := range mm.Thread(root) {
		seen = append(seen, p.UserID+": "+p.Message)
	}
	t.Fatalf("no post with %q in the thread:\n%s\nup's log:\n%s", text, strings.Join(seen, "\n"), s.log)
	return mmdouble.Post{}
}

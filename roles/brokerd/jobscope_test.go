package brokerd

import (
	"testing"

	"boxmaker/wire"
)

// A grant scoped to a job applies only in sessions brokerd minted for that
// job, and brokerd has minted none: not in a chat session, whatever its name.
func TestJobGrantDoesNotApplyInAChatSession(t *testing.T) {
	h := newHome(t, "", map[string]string{
		"nightly-echo": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\njobs = [\"nightly\"]\n[constraints]\npatterns = [\"echo .*\"]\n",
	})
	h.write("etc/jobs/nightly.toml", "every = \"1h\"\nprompt = \"say hi\"\ndeliver = \"log\"\n")
	h.start()
	for _, session := range []string{"chat-1", "job-nightly-202612010700"} {
		if got := h.toolCall(session, "shell", `{"command":"echo hi"}`); got != (wire.Denied{Reason: wire.NoGrant}) {
			t.Errorf("session %s: %#v, want denied no_grant", session, got)
		}
	}
}

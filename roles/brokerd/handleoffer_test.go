package brokerd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"boxmaker/fixtures/poll"
	"boxmaker/wire"
)

// An approval whose call reads a secret handle is not offered on
// Mattermost: its subject carries the handle's content, which would leave
// the host in a post. One reading nothing secret is offered as before.
func TestASecretHandlesApprovalStaysOnTheHost(t *testing.T) {
	grants := map[string]string{
		"bank": "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\nresult = \"handle\"\n[constraints]\npaths = [\"secret\"]\n",
		"echo": "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npatterns = [\"PIN .*\\\\n\", \"printf plain\"]\n",
	}
	h := newHome(t, "[gateway]\nurl = \"https://mm.example/\"\nallow_users = [\"aaaaaaaaaaaaaaaaaaaaaaaaaa\"]\n", grants)
	offered := fakeGateway(t, filepath.Join(h.dir, "run", "brokerd-gatewayd", "gateway.sock"))
	h.start()
	h.mustResult("s1", "notes_read", `{"path":"secret/bank.md"}`)
	go h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: 7, Tool: "shell", Arguments: `{"command":"handle:h1"}`})
	secret := waitForPending(t, h)
	poll.Until(t, "brokerd's log to say the approval stays on the host", func() bool {
		return strings.Contains(h.log.String(), "approval "+secret.Approval+": not offered on Mattermost")
	})
	go h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s2"), Call: 8, Tool: "shell", Arguments: `{"command":"printf plain"}`})
	var plain string
	poll.Until(t, "the plain approval to be offered on Mattermost", func() bool {
		for _, id := range offered() {
			if id != secret.Approval {
				plain = id
			}
		}
		return plain != ""
	})
	for _, id := range offered() {
		if id == secret.Approval {
			t.Fatalf("the approval of a call reading a secret handle reached gatewayd (%s)", id)
		}
	}
}

// fakeGateway listens where gatewayd would and returns what approval ids
// it has been offered so far; it never answers.
func fakeGateway(t *testing.T, path string) func() []string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var ids []string
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				for {
					e, err := wire.ReadEnvelope(c)
					if err != nil {
						return
					}
					if r, ok := e.Msg.(wire.ApprovalRequest); ok {
						mu.Lock()
						ids = append(ids, r.Approval)
						mu.Unlock()
					}
				}
			}()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
}

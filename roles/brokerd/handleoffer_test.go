package brokerd

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
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

// An approval of a call in a session above private is kept on the host
// unless gateway.secret_approvals allows it: the model read a secret there
// and may have written it into the arguments, which the approval post
// would carry off the host (issue 23, finding 5).
func TestSecretSessionApproval(t *testing.T) {
	grants := map[string]string{
		"bank": "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"secret\"]\n",
		"echo": "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npatterns = [\"printf .*\"]\n",
	}
	const gateway = "[gateway]\nurl = \"https://mm.example/\"\nallow_users = [\"aaaaaaaaaaaaaaaaaaaaaaaaaa\"]\n"
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[allow], func(t *testing.T) {
			h := newHome(t, gateway+fmt.Sprintf("secret_approvals = %v\n", allow), grants)
			offered := fakeGateway(t, filepath.Join(h.dir, "run", "brokerd-gatewayd", "gateway.sock"))
			h.start()
			h.mustResult("s1", "notes_read", `{"path":"secret/bank.md"}`)
			go h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: 7, Tool: "shell", Arguments: `{"command":"printf PIN-1234"}`})
			secret := waitForPending(t, h)
			if secret.SessionTaint != wire.Secret {
				t.Fatalf("the approval was decided at %v, want secret", secret.SessionTaint)
			}
			if allow {
				poll.Until(t, "the allowed approval to be offered on Mattermost", func() bool { return slices.Contains(offered(), secret.Approval) })
				return
			}
			// A plain session's approval, asked after it, is offered: by
			// then the secret one would have been too.
			go h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s2"), Call: 8, Tool: "shell", Arguments: `{"command":"printf plain"}`})
			poll.Until(t, "the plain approval to be offered on Mattermost", func() bool {
				return slices.ContainsFunc(offered(), func(id string) bool { return id != secret.Approval })
			})
			if slices.Contains(offered(), secret.Approval) {
				t.Fatalf("the approval of a call in a secret session reached gatewayd (%s)", secret.Approval)
			}
			poll.Until(t, "brokerd's log to say the approval stays on the host", func() bool {
				return strings.Contains(h.log.String(), "approval "+secret.Approval+": not offered on Mattermost: the session is secret")
			})
		})
	}
}

package brokerd

import (
	"boxmaker/fixtures/poll"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The chat's Ctrl-C refuses a turn's pending approvals and then hangs up:
// a refusal brokerd acknowledged is recorded as refused even when the
// caller's hangup races it, so that no cancelled call is left half
// answered. Each round closes the caller and refuses at the same moment.
func TestRefusalRacingTheHangupIsRecorded(t *testing.T) {
	h := newHome(t, "", allGrants())
	h.start()
	const rounds = 20
	refused := map[wire.CallID]bool{}
	for i := range rounds {
		call := wire.CallID(100 + i)
		c, err := sock.Dial(h.socket("loopd"))
		if err != nil {
			t.Fatal(err)
		}
		go c.Call(context.Background(), wire.ToolRequest{Session: sessionID(t, "s1"), Call: call, Tool: "shell", Arguments: `{"command":"printf race"}`}, nil)
		a := waitForPending(t, h)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); c.Close() }()
		var res wire.Message
		go func() {
			defer wg.Done()
			res, _, _ = h.call("bxctl", wire.ApprovalAnswer{Approval: a.Approval, Approve: false})
		}()
		wg.Wait()
		if r, ok := res.(wire.ApprovalAnswerResult); ok && r.Outcome == wire.OutcomeRefused {
			refused[call] = true
		}
		waitForNoPending(t, h)
	}
	// brokerd records a refusal just after it takes the approval off its
	// list, so the last rounds' records may come a moment after the loop.
	missing := func() []wire.CallID {
		lines, _ := audit.Tail(filepath.Join(h.dir, "audit"), 2*rounds)
		log := strings.Join(lines, "\n")
		var out []wire.CallID
		for call := range refused {
			if !strings.Contains(log, fmt.Sprintf(`"call":%d,`, call)) {
				out = append(out, call)
			}
		}
		return out
	}
	poll.Until(t, "an audit record of every refusal brokerd answered", func() bool { return len(missing()) == 0 })
	t.Logf("%d of %d refusals came before the hangup was seen", len(refused), rounds)
}

func waitForNoPending(t *testing.T, h *home) {
	t.Helper()
	poll.Within(t, 15*time.Second, "no approval pending", func() bool {
		res, _, err := h.call("bxctl", wire.ApprovalList{})
		return err == nil && len(res.(wire.ApprovalListResult).Approvals) == 0
	})
}

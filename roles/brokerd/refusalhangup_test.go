package brokerd

import (
	"boxmaker/fixtures/poll"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/policy"
	"boxmaker/roles/internal/config"
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

// brokerd lists an approval before it tells the caller, so the owner may
// refuse it before the pending frame is written; if the caller has hung up
// by then, that write fails. The refusal the owner was told of is recorded
// all the same. The end-to-end test above meets this order only now and
// then; here the reply itself answers the approval, then finds the caller
// gone, so the order is the same every run.
func TestRefusalBeforeThePendingFrameIsRecorded(t *testing.T) {
	b, dir := approvalBroker(t)
	m := wire.ToolRequest{Session: sessionID(t, "s1"), Call: 7, Tool: "shell", Arguments: `{"command":"printf unheard"}`}
	req := request{session: m.Session, id: m.Call, call: decodeCall(m)}
	d := askDecision(t, req)
	var told wire.ApprovalAnswerResult
	hungUp := errors.New("write: broken pipe")
	reply := func(final bool, msg wire.Message) error {
		if p, ok := msg.(wire.PendingApproval); ok && !final {
			told = b.answerApproval(wire.ApprovalAnswer{Approval: p.Approval, Approve: false}, "local:owner")
		}
		return hungUp
	}
	if err := b.awaitApproval(context.Background(), req, d, reply); !errors.Is(err, hungUp) {
		t.Errorf("awaitApproval: %v, want the failed write", err)
	}
	if told.Outcome != wire.OutcomeRefused {
		t.Fatalf("the owner was told %q, not refused", told.Outcome)
	}
	lines, err := audit.Tail(dir, 1)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], `"call":7,`) || !strings.Contains(lines[0], `"reason":"approval_refused"`) {
		t.Fatalf("audit after a refusal the caller never heard of: %v %q", err, lines)
	}
	if left := b.approvals.list(); len(left) != 0 {
		t.Errorf("still pending: %v", left)
	}
}

// approvalBroker is a broker with just what awaitApproval needs: the
// default config, an approval list and an audit log in dir.
func approvalBroker(t *testing.T) (*broker, string) {
	dir := t.TempDir()
	w, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	cfg := config.Defaults()
	return &broker{
		cfg: cfg, log: log.New(io.Discard, "", 0), clock: time.Now, audit: w,
		approvals: newApprovals(cfg.Broker.MaxPendingApprovals),
		fatal:     func(err error) { t.Errorf("brokerd stopped: %v", err) },
	}, dir
}

// askDecision decides req under the ask grant for printf.
func askDecision(t *testing.T, req request) policy.Decision {
	g, err := policy.ParseGrant("printf.toml", []byte(printfGrant))
	if err != nil {
		t.Fatal(err)
	}
	now, _ := wire.TimestampOf(time.Now())
	d, err := policy.Decide([]policy.Grant{g}, policy.SessionRequest(policy.NewSession(), req.call, now))
	if err != nil || d.Outcome() != policy.AwaitsApproval {
		t.Fatalf("decision %v (%v), want an ask", d.Outcome(), err)
	}
	return d
}

package brokerd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// An answer the owner was told was taken is the decision, even when the
// approval's time ran out as it came: with both the answer and the
// expiry ready, the record must be the owner's refusal every time, never
// approval_expired (Go's select picks either, so rounds find the order).
func TestAnAnswerTakenAtExpiryIsTheDecision(t *testing.T) {
	b, dir := approvalBroker(t)
	b.cfg.Broker.ApprovalTimeout = config.Dur(time.Nanosecond)
	const rounds = 40
	for call := wire.CallID(1); call <= rounds; call++ {
		m := wire.ToolRequest{Session: sessionID(t, "s1"), Call: call, Tool: "shell", Arguments: `{"command":"printf late"}`}
		req := request{session: m.Session, id: m.Call, call: decodeCall(m)}
		var told wire.ApprovalAnswerResult
		reply := func(final bool, msg wire.Message) error {
			if p, ok := msg.(wire.PendingApproval); ok && !final {
				told = b.answerApproval(wire.ApprovalAnswer{Approval: p.Approval, Approve: false}, "local:owner")
			}
			return nil
		}
		if err := b.awaitApproval(context.Background(), req, askDecision(t, req), reply); err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		if told.Outcome != wire.OutcomeRefused {
			t.Fatalf("call %d: the owner was told %q, not refused", call, told.Outcome)
		}
	}
	lines, err := audit.Tail(dir, rounds)
	if err != nil || len(lines) != rounds {
		t.Fatalf("audit: %v, %d records, want %d", err, len(lines), rounds)
	}
	for call, line := range lines {
		if !strings.Contains(line, fmt.Sprintf(`"call":%d,`, call+1)) || !strings.Contains(line, `"reason":"approval_refused"`) {
			t.Errorf("call %d, refused as it expired, is recorded as %s", call+1, line)
		}
	}
}

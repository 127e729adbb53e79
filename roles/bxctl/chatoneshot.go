package bxctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"boxmaker/wire"
)

// How a chat without a terminal treats the approvals its turn asks for.
const (
	approvalsWait = "wait" // wait for an answer elsewhere, at most --approval-wait
	approvalsDeny = "deny" // refuse each at once
)

// defaultApprovalWait bounds how long a chat without a terminal waits for
// one approval: long enough to answer it from another terminal or
// Mattermost, far shorter than brokerd's 10 minutes, which is for a prompt
// someone sits at.
const defaultApprovalWait = 2 * time.Minute

// oneShot is how a chat without a terminal runs: its approval policy and
// the record of its calls, for --json.
type oneShot struct {
	approvals string
	wait      time.Duration

	mu     sync.Mutex
	timers []*time.Timer
}

// callRecord is one call of the turn as --json shows it.
type callRecord struct {
	Call      wire.CallID `json:"call"`
	Tool      string      `json:"tool"`
	Arguments string      `json:"arguments"`
	Outcome   string      `json:"outcome"` // result, failed, denied; "" if the turn ended first
	Detail    string      `json:"detail"`
}

// turnJSON is what --json prints on stdout.
type turnJSON struct {
	Session string       `json:"session"`
	Reply   string       `json:"reply"`
	Calls   []callRecord `json:"calls"`
	Error   string       `json:"error,omitempty"`
}

func parseApprovals(s string) (string, error) {
	switch s {
	case approvalsWait, approvalsDeny:
		return s, nil
	}
	return "", usagef("--approvals: %q is not wait or deny", s)
}

// pendingApproval acts on an approval the turn waits for, when nobody can
// be asked here: refuse it now, or let it be answered elsewhere within the
// bound and refuse it then. A refusal goes through brokerd, which records it.
func (c *chatter) pendingApproval(ctx context.Context, a wire.Approval) {
	o := c.oneShot
	if o.approvals == approvalsDeny {
		c.refuseApproval(ctx, a, "refused (--approvals=deny)")
		return
	}
	// The start of the line is what it said before --approval-wait, which
	// scripts may read.
	c.view.activity(fmt.Sprintf("approval %s is pending until %s: answer with `boxmaker approve %s` or `boxmaker deny %s` within %s, or it is refused (--approval-wait)",
		a.Approval, a.Expires, a.Approval, a.Approval, o.wait))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.timers = append(o.timers, time.AfterFunc(o.wait, func() {
		c.refuseApproval(context.WithoutCancel(ctx), a, fmt.Sprintf("not answered within %s: refused", o.wait))
	}))
}

func (c *chatter) refuseApproval(ctx context.Context, a wire.Approval, why string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := callAdmin(ctx, c.paths, wire.ApprovalAnswer{Approval: a.Approval, Approve: false})
	if r, ok := res.(wire.ApprovalAnswerResult); ok && err == nil && r.Outcome == wire.OutcomeRefused {
		c.view.activity(fmt.Sprintf("approval %s %s", a.Approval, why))
	}
}

// stop cancels the bounds still running: the turn is over.
func (o *oneShot) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.timers {
		t.Stop()
	}
}

// writeJSON prints the turn as one JSON object, escaped for a terminal.
func (c *chatter) writeJSON(out io.Writer, reply string, turnErr error) error {
	calls := []callRecord{}
	for _, id := range c.order {
		e := c.calls[id]
		r := callRecord{Call: id, Tool: e.Tool, Arguments: e.Arguments}
		if res, ok := c.results[id]; ok {
			r.Outcome, r.Detail = res.Outcome, res.Detail
		}
		calls = append(calls, r)
	}
	t := turnJSON{Reply: reply, Calls: calls}
	if c.session != nil {
		t.Session = c.session.String()
	}
	if turnErr != nil {
		t.Error = turnErr.Error()
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, jsonForTerminal(string(b)))
	return err
}

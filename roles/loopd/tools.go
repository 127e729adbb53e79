package loopd

import (
	"context"
	"fmt"
	"strings"

	"boxmaker/wire"
)

// call carries out one tool call of the model's reply: announced, sent to
// brokerd under the session's next call id, its outcome written as a tool
// result and announced. Only a stopping loopd ends it with an error; every
// other failure is a result the model reads.
func (t *turn) call(ctx context.Context, c wire.ToolCall) error {
	id := t.st.nextCall
	t.st.nextCall++
	t.ev.send(wire.ToolCallEvent{Call: id, Tool: c.Name, Arguments: c.Arguments})
	res, outcome, err := t.outcome(ctx, id, c)
	if err != nil {
		return err
	}
	if err := t.write(res); err != nil {
		return err
	}
	t.st.since += len(res.Content)
	t.ev.send(wire.ToolResultEvent{Call: id, Outcome: outcome.kind, Detail: outcome.detail})
	return nil
}

// toolOutcome is what the owner is told of a call: result, failed or denied.
type toolOutcome struct{ kind, detail string }

// outcome asks brokerd, unless the arguments are not a JSON object: such a
// call is never sent (brokerd could only refuse it, and replaying it would
// wedge the server), and the model is told so.
func (t *turn) outcome(ctx context.Context, id wire.CallID, c wire.ToolCall) (wire.ToolResult, toolOutcome, error) {
	res := wire.ToolResult{Call: id, ToolCallID: c.ID, Class: wire.Private}
	if !validArguments(c.Arguments) {
		res.Time = t.l.now()
		res.Content = "failed: the arguments are not a JSON object, so the call was not made; call the tool again with a JSON object of its parameters"
		return res, toolOutcome{"failed", "the model's arguments are not a JSON object; not sent to brokerd"}, nil
	}
	resp, err := t.askBroker(ctx, wire.ToolRequest{Session: t.ss.id, Call: id, Tool: c.Name, Arguments: c.Arguments})
	if ctx.Err() != nil {
		return res, toolOutcome{}, ctx.Err()
	}
	res.Time = t.l.now()
	switch r := resp.(type) {
	case wire.Result:
		res.Content, res.Class, res.Untrusted, res.Truncated = r.Content, r.Class, r.Untrusted, r.Truncated
		return res, toolOutcome{"result", resultDetail(r)}, nil
	case wire.Failed:
		// The message came out of the sandbox: untrusted, like its output.
		res.Content, res.Untrusted = "failed: "+r.Message, true
		return res, toolOutcome{"failed", shorten(r.Message, 200)}, nil
	case wire.Denied:
		res.Content = "denied: " + string(r.Reason)
		return res, toolOutcome{"denied", string(r.Reason)}, nil
	}
	if err == nil {
		err = fmt.Errorf("brokerd answered %s", wire.KindOf(resp))
	}
	t.l.log.Printf("session %s call %d: %v", t.ss.id, id, err)
	res.Content = "failed: the broker did not answer this call: " + err.Error()
	return res, toolOutcome{"failed", "brokerd did not answer: " + err.Error()}, nil
}

func resultDetail(r wire.Result) string {
	parts := []string{fmt.Sprintf("%d bytes", len(r.Content)), r.Class.String()}
	if r.Untrusted {
		parts = append(parts, "untrusted")
	}
	if r.Truncated {
		parts = append(parts, "truncated")
	}
	return strings.Join(parts, ", ")
}

// askBroker sends one request on the turn's connection to brokerd, dialled
// when first needed; a pending approval is announced as it arrives.
func (t *turn) askBroker(ctx context.Context, req wire.ToolRequest) (wire.Message, error) {
	if t.broker == nil {
		c, err := t.l.dialBroker(ctx)
		if err != nil {
			return nil, err
		}
		t.broker = c
	}
	resp, err := t.broker.Call(ctx, req, func(m wire.Message) error {
		if p, ok := m.(wire.PendingApproval); ok {
			t.ev.send(wire.ApprovalPendingEvent{Call: req.Call, Approval: p.Approval, Expires: p.Expires})
		}
		return nil
	})
	if err != nil {
		t.closeBroker() // brokerd closes after an error; dial afresh
	}
	return resp, err
}

// dialBroker connects to brokerd, waiting a little for one that restarts.
func (l *loopd) dialBroker(ctx context.Context) (*brokerConn, error) {
	return l.broker.dial(ctx)
}

func (t *turn) closeBroker() {
	if t.broker != nil {
		t.broker.Close()
		t.broker = nil
	}
}

// toolList asks brokerd which tools the session may be shown.
func (l *loopd) toolList(ctx context.Context, id wire.SessionID) ([]wire.ToolSpec, error) {
	c, err := l.dialBroker(ctx)
	if err != nil {
		return nil, fmt.Errorf("brokerd is not answering, so the session's tools are unknown: %w", err)
	}
	defer c.Close()
	resp, err := c.Call(ctx, wire.ToolList{Session: id}, nil)
	if err != nil {
		return nil, fmt.Errorf("tool_list: %w", err)
	}
	list, ok := resp.(wire.ToolListResult)
	if !ok {
		return nil, fmt.Errorf("tool_list: brokerd answered %s", wire.KindOf(resp))
	}
	specs, dropped := usableTools(list.Tools)
	if len(dropped) > 0 {
		l.log.Printf("leaving out tools whose parameters are not a JSON object: %s", strings.Join(dropped, ", "))
	}
	return specs, nil
}

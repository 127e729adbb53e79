package brokerd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"
)

// request is a tool_request decoded at brokerd's door: who asks (the
// session and its call id) and the call, typed (wire.Call). Every later
// stage takes it or the Decision's Call; none reads the request's strings
// again, and none looks the tool up by name.
type request struct {
	session wire.SessionID
	id      wire.CallID
	call    wire.Call
}

// toolRequest answers one tool_request: decode, decide, record, then run,
// ask, or deny.
func (b *broker) toolRequest(ctx context.Context, m wire.ToolRequest, reply replyFunc) error {
	req := request{session: m.Session, id: m.Call, call: decodeCall(m)}
	state, err := b.sessions.Get(req.session)
	if err != nil {
		return err
	}
	d, err := b.decide(req, state)
	if err != nil {
		return err
	}
	switch d.Outcome() {
	case policy.Allowed:
		if err := b.record(req, d); err != nil {
			return err
		}
		return b.execute(ctx, req, d, reply)
	case policy.AwaitsApproval:
		return b.awaitApproval(ctx, req, d, reply)
	default:
		if err := b.record(req, d); err != nil {
			return err
		}
		return reply(true, wire.Denied{Reason: d.Reason()})
	}
}

// decodeCall is the one decode of a tool_request. An MCP tool has no
// catalog row: its arguments are spelled canonically here, and DecideMCP
// makes its Call from the pin once they meet the pinned schema.
func decodeCall(m wire.ToolRequest) wire.Call {
	if strings.HasPrefix(m.Tool, wire.McpToolPrefix) {
		return wire.DecodeCall(m.Tool, canonicalMCPArguments(m.Arguments)) // mcp.go
	}
	return wire.DecodeCall(m.Tool, m.Arguments)
}

// decide runs the policy over the grants as they are on disk now, so that a
// changed grant takes effect on the next call. The session's taint and
// untrusted flag come from state, brokerd's own record, never from loopd.
func (b *broker) decide(req request, state policy.Session) (policy.Decision, error) {
	now, err := wire.TimestampOf(b.clock())
	if err != nil {
		return policy.Decision{}, err
	}
	if strings.HasPrefix(req.call.Name(), wire.McpToolPrefix) {
		return b.decideMCP(context.Background(), req, state) // mcp.go
	}
	r := policy.SessionRequest(state, req.call, now)
	// Only the session's own handles: another session's names are unknown.
	if r.Handles, err = b.handles.Load(req.session, policy.HandleRefs(req.call)); err != nil {
		return policy.Decision{}, err
	}
	return policy.Decide(b.grantsIn(req.session), r)
}

// record writes d to the audit log and returns once it is durable. The
// record keeps the call as it was asked (canonical, or as sent when it did
// not decode): a handle stands there as its reference ("handle:h1"), never
// as its content.
//
// WARNING: every path that lets a decision take effect (a run, a denial sent)
// calls record first and stops on its error. TestEveryDecisionIsAudited
// proves that each kind of decision reaches the log.
func (b *broker) record(req request, d policy.Decision) error {
	dr, err := d.Record()
	if err != nil {
		return err
	}
	_, err = b.audit.Append(wire.AuditRecord{
		Session: req.session, Call: req.id, Tool: d.Call().Name(), Arguments: d.Call().Arguments(),
		SessionTaint: d.Taint(), Decision: dr,
	})
	if err != nil {
		b.fatal(fmt.Errorf("audit log: %w", err))
		return err
	}
	return nil
}

// execute runs an allowed or approved call, updates the session from its
// grant and the labels of the notes its sandbox could read (durably, before
// the answer leaves; the notes it wrote are labelled by then too) and
// answers the result.
func (b *broker) execute(ctx context.Context, req request, d policy.Decision, reply replyFunc) error {
	g, err := d.Runnable()
	if err != nil {
		return err
	}
	if tool, _ := d.Input().Tool(); tool.InBroker {
		return b.inspect(ctx, req, d, g, reply)
	}
	// What the call was given through handles labels what it returns and
	// what it writes, as the notes it could read do.
	in := inputLabel(d)
	var out outcome
	if _, ok := d.Input().Args().(wire.McpArgs); ok {
		out, err = b.runMCP(ctx, req, d) // mcp.go
	} else {
		out, err = b.runner.run(ctx, d, b.noteWriter(req, g, in))
	}
	if err != nil {
		return err
	}
	out.read = out.read.join(in)
	if !out.ran && len(d.Handles()) > 0 {
		out = withheldFailure(req, d, b.log)
	}
	if out.ran && out.output.OK && g.ResultIsHandle() {
		return b.keepHandle(req, g, out, reply)
	}
	if out.ran {
		// The session takes on the labels of the notes its sandbox could
		// read too, so that a note launders neither taint nor trust.
		if err := b.sessions.ApplyResultRead(req.session, g, out.read.class, out.read.untrusted); err != nil {
			return err
		}
	}
	return reply(true, resultOf(out, g, b.cfg.Broker.ResultMaxBytes))
}

// awaitApproval parks an ask decision until the owner answers or it expires.
// Nothing is recorded until then: an ask is not yet a decision.
func (b *broker) awaitApproval(ctx context.Context, req request, d policy.Decision, reply replyFunc) error {
	g, _ := d.Grant()
	expires, err := wire.TimestampOf(b.clock().Add(b.cfg.Broker.ApprovalTimeout.D()))
	if err != nil {
		return err
	}
	// The taint and the flag the call was decided at: the session's,
	// raised by the handles it refers to (an untrusted handle is why an
	// auto grant with when_untrusted = "ask" asks).
	info, answers, err := b.approvals.add(wire.Approval{
		Session: req.session, Call: req.id, Tool: d.Call().Name(), Subject: approvalSubject(d.Input().Args(), g), Arguments: d.Call().Arguments(),
		Grant: g.ID(), SessionTaint: d.Taint(), SessionUntrusted: d.Untrusted(), Expires: expires,
	})
	if err != nil {
		b.log.Printf("session %s call %d: not offered: %v (broker.max_pending_approvals is %d)", req.session, req.id, err, b.cfg.Broker.MaxPendingApprovals)
		return reply(true, wire.Failed{Message: fmt.Sprintf("%s: not asked: %v (limit %d); answer or let expire the ones waiting, then try again",
			req.call.Name(), err, b.cfg.Broker.MaxPendingApprovals)})
	}
	defer b.approvals.remove(info.Approval)
	b.log.Printf("approval %s: session %s call %d %s under grant %s, until %s", info.Approval, req.session, req.id, req.call.Name(), g.ID(), expires)
	// The approval is listed from add on, so an answer may come before
	// the caller hears of it: a caller gone by then still has it recorded.
	if err := reply(false, wire.PendingApproval{Approval: info.Approval, Expires: expires}); err != nil {
		return b.callerLeft(req, d, info.Approval, answers, err)
	}
	if offered, why := b.offeredOffHost(d); b.gateway && offered {
		offerCtx, stopOffer := context.WithCancel(ctx)
		defer stopOffer()
		go b.offerToGateway(offerCtx, info)
	} else if b.gateway {
		b.log.Printf("approval %s: not offered on Mattermost: %s; answer it with boxmaker approvals", info.Approval, why)
	}
	timer := time.NewTimer(b.cfg.Broker.ApprovalTimeout.D())
	defer timer.Stop()
	select {
	case ans := <-answers:
		if ctx.Err() != nil {
			return b.withdrawn(req, d, info.Approval, &ans, context.Cause(ctx))
		}
		return b.answered(ctx, req, d, ans, reply)
	case <-timer.C:
		return b.expired(ctx, req, d, info.Approval, answers, reply)
	case <-ctx.Done():
		return b.callerLeft(req, d, info.Approval, answers, context.Cause(ctx))
	}
}

// expired ends an approval whose time ran out. An answer that came as it
// did was taken (the owner was told so), and is the decision: off the list
// first, so that no answer can come after the look.
func (b *broker) expired(ctx context.Context, req request, d policy.Decision, id string, answers <-chan answer, reply replyFunc) error {
	b.approvals.remove(id)
	select {
	case ans := <-answers:
		if ctx.Err() != nil {
			return b.withdrawn(req, d, id, &ans, context.Cause(ctx))
		}
		return b.answered(ctx, req, d, ans, reply)
	default:
		return b.refuse(req, d, wire.ApprovalExpired, reply)
	}
}

// callerLeft ends an approval whose caller is gone (why): its ctx ended, or
// the pending frame could not reach it. An answer may have come with the
// hangup: the chat's Ctrl-C refuses a turn's approvals, then hangs up. Off
// the list first, so that no answer can come after the look (answer
// delivers under the same lock).
func (b *broker) callerLeft(req request, d policy.Decision, id string, answers <-chan answer, why error) error {
	b.approvals.remove(id)
	select {
	case ans := <-answers:
		return b.withdrawn(req, d, id, &ans, why)
	default:
		return b.withdrawn(req, d, id, nil, why)
	}
}

// withdrawn ends an approval whose caller left. Nobody would get a result,
// so an approval is not run; but a refusal the owner gave is still the
// owner's decision and is recorded as refused, so that a cancelled turn
// never leaves a call half answered. Without an answer nothing ran and
// nothing is recorded: callerLeft took it off every list before it looked,
// and the gateway's offer ends with ctx.
func (b *broker) withdrawn(req request, d policy.Decision, id string, ans *answer, why error) error {
	if ans != nil && !ans.approve {
		b.log.Printf("approval %s: refused as its caller left: %v", id, why)
		if err := b.refuse(req, d, wire.ApprovalRefused, func(bool, wire.Message) error { return nil }); err != nil {
			return err
		}
		return why
	}
	b.log.Printf("approval %s: withdrawn: %v", id, why)
	return why
}

// answered acts on the owner's answer. An approval is decided again first:
// the session's taint or the grant may have changed while it waited, and the
// owner approved this grant, no other.
func (b *broker) answered(ctx context.Context, req request, asked policy.Decision, ans answer, reply replyFunc) error {
	if !ans.approve {
		return b.refuse(req, asked, wire.ApprovalRefused, reply)
	}
	state, err := b.sessions.Get(req.session)
	if err != nil {
		return err
	}
	again, err := b.decide(req, state)
	if err != nil {
		return err
	}
	if again.Outcome() == policy.Denied {
		if err := b.record(req, again); err != nil {
			return err
		}
		return reply(true, wire.Denied{Reason: again.Reason()})
	}
	was, _ := asked.Grant()
	now, _ := again.Grant()
	if again.Outcome() != policy.AwaitsApproval || now.ID() != was.ID() {
		b.log.Printf("session %s call %d: the grants changed while the approval waited (%s, not %s ask); not run", req.session, req.id, now.ID(), was.ID())
		return b.refuse(req, asked, wire.ApprovalExpired, reply)
	}
	approved, err := policy.Approve(again, ans.approver, ans.post)
	if err != nil {
		return err
	}
	if err := b.record(req, approved); err != nil {
		return err
	}
	return b.execute(ctx, req, approved, reply)
}

func (b *broker) refuse(req request, asked policy.Decision, reason wire.DenyReason, reply replyFunc) error {
	d, err := policy.Refuse(asked, reason)
	if err != nil {
		return err
	}
	if err := b.record(req, d); err != nil {
		return err
	}
	return reply(true, wire.Denied{Reason: reason})
}

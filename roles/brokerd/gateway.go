package brokerd

import (
	"context"
	"strings"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// offerToGateway shows a pending approval to the owner on Mattermost: it
// sends approval_request to gatewayd and holds that request open until
// gatewayd answers or ctx ends (the approval was answered elsewhere, expired,
// or its caller left), which closes the connection and tells gatewayd so.
// When gatewayd is down or restarts, the offer is made again until then.
func (b *broker) offerToGateway(ctx context.Context, info wire.Approval) {
	path := b.dial.gateway
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		dec, err := askGateway(ctx, path, info)
		if err == nil {
			b.takeGatewayDecision(info.Approval, dec)
			return
		}
		if ctx.Err() != nil {
			return
		}
		b.log.Printf("approval %s: gatewayd: %v; offering again in %s", info.Approval, err, backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func askGateway(ctx context.Context, path string, info wire.Approval) (wire.ApprovalDecision, error) {
	c, err := sock.Dial(path)
	if err != nil {
		return wire.ApprovalDecision{}, err
	}
	defer c.Close()
	res, err := c.Call(ctx, wire.ApprovalRequest(info), nil)
	if err != nil {
		return wire.ApprovalDecision{}, err
	}
	dec, ok := res.(wire.ApprovalDecision)
	if !ok {
		return wire.ApprovalDecision{}, errUnexpected(res)
	}
	return dec, nil
}

// takeGatewayDecision delivers gatewayd's answer. Only an answer for this
// approval from a Mattermost approver, with its post, counts.
func (b *broker) takeGatewayDecision(id string, dec wire.ApprovalDecision) {
	if dec.Approval != id || !strings.HasPrefix(dec.Approver, "mm:") || dec.Post == "" {
		b.log.Printf("approval %s: gatewayd answered for %q by %q on post %q; ignored", id, dec.Approval, dec.Approver, dec.Post)
		return
	}
	post := dec.Post
	if b.approvals.answer(id, answer{approve: dec.Approve, approver: dec.Approver, post: &post}) {
		b.log.Printf("approval %s: %s by %s on post %s", id, map[bool]string{true: "approved", false: "refused"}[dec.Approve], dec.Approver, post)
	}
}

type unexpectedError struct{ kind string }

func (e unexpectedError) Error() string { return "unexpected answer " + e.kind }

func errUnexpected(m wire.Message) error { return unexpectedError{wire.KindOf(m)} }

// offeredOffHost reports whether an approval may be offered on Mattermost.
// Its subject shows the arguments with every handle's content put in, so
// that the owner sees what runs (DESIGN.md section 11); a secret handle's
// content would then leave the host in a post and stay in the channel's
// history, so such a call is never offered. Nor, unless
// gateway.secret_approvals says so, is any call decided above private: the
// model has read a secret there and may have written it into the
// arguments. Either is answered on the host only, where chat and
// `boxmaker approvals` show it; the thread's tool line names the approval
// and the command that answers it.
func (b *broker) offeredOffHost(d policy.Decision) (bool, string) {
	if class, _ := d.InputLabel(); class >= wire.Secret {
		return false, "the call reads secret handles (" + strings.Join(d.Handles(), ", ") + "), whose content stays on the host"
	}
	if d.Taint() > wire.Private && !b.secretApprovals {
		return false, "the session is " + d.Taint().String() + " and its arguments may hold a secret (gateway.secret_approvals is off)"
	}
	return true, ""
}

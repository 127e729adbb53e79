package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sync"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// gateway.sock is the brokerd-gatewayd pair of the role table, served by
// the shared gate: approval_request and job_ended (jobended.go) from
// brokerd's uids, one request at a time per connection. brokerd withdraws an approval by closing the
// connection that holds its request, which ends the handler's context with
// sock.ErrPeerGone.

// serveBroker serves gateway.sock until ctx ends; allowPeer, when set,
// replaces the table's peer check (tests).
func (g *gateway) serveBroker(ctx context.Context, ln *net.UnixListener, allowPeer func(sock.Peer) bool) error {
	gate, err := sock.ServerFor("brokerd", "gatewayd", g.log)
	if err != nil {
		return err
	}
	gate.ReplacePeerCheck(allowPeer)
	if err := g.brokerKinds(ctx).Route(gate); err != nil {
		return err
	}
	g.log.Printf("serving %s", ln.Addr())
	return gate.Serve(ctx, ln)
}

// brokerKinds is what gateway.sock answers brokerd; ctx is gatewayd's.
func (g *gateway) brokerKinds(ctx context.Context) sock.Kinds {
	return sock.Kinds{
		"approval_request": func(hctx context.Context, _ sock.Peer, e wire.Envelope, reply sock.Replier) error {
			return g.answerApproval(ctx, hctx, e.Msg.(wire.ApprovalRequest), reply)
		},
		"job_ended": func(_ context.Context, _ sock.Peer, e wire.Envelope, reply sock.Replier) error {
			return g.answerJobEnded(e.Msg.(wire.JobEnded), reply)
		},
	}
}

// answerApproval holds one approval_request until it is decided, withdrawn
// (hctx ends because brokerd hung up), expired, or gatewayd stops (ctx
// ends); only a decision is answered, the others close the connection.
func (g *gateway) answerApproval(ctx, hctx context.Context, req wire.ApprovalRequest, reply sock.Replier) error {
	if err := checkRequest(req); err != nil {
		return sock.Refusal{Code: wire.BadMessage, Detail: err.Error()}
	}
	d, ok := g.approvals.await(ctx, req, withdrawn(hctx))
	if !ok {
		return sock.ErrNoAnswer
	}
	if err := reply(wire.Envelope{Final: true, Msg: d}); err != nil {
		g.log.Printf("approval %s: the decision did not reach brokerd (%v); it is answered again when brokerd offers it again", d.Approval, err)
		return sock.ErrNoAnswer
	}
	return nil
}

// withdrawn is closed when brokerd hangs up on the request hctx belongs
// to, and not when the request ends otherwise: gatewayd stopping leaves an
// approval pending, for the brokerd that offers it again.
func withdrawn(hctx context.Context) <-chan struct{} {
	gone := make(chan struct{})
	context.AfterFunc(hctx, func() {
		if errors.Is(context.Cause(hctx), sock.ErrPeerGone) {
			close(gone)
		}
	})
	return gone
}

// approvalID is what gatewayd accepts as an approval id: it is shown in
// posts and typed back in replies.
var approvalID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`) })

// checkRequest refuses what gatewayd could not show faithfully.
func checkRequest(r wire.ApprovalRequest) error {
	switch {
	case !approvalID().MatchString(r.Approval):
		return fmt.Errorf("approval id %q is not 1 to 128 of [A-Za-z0-9_-]", r.Approval)
	case r.Tool == "" || r.Grant == "":
		return errors.New("approval_request without a tool or a grant")
	case r.Expires == 0:
		return errors.New("approval_request without an expiry")
	}
	return nil
}

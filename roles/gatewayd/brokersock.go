package gatewayd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sync"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// gateway.sock has its own accept loop rather than sock.Server: brokerd
// withdraws an approval by closing the connection that holds its request,
// and only a reader that keeps reading while the request waits sees that.
// What it accepts is sock.Server's table in one line: approval_request
// from brokerd's uid, one request at a time.

// serveBroker accepts brokerd's connections until ctx ends.
func (g *gateway) serveBroker(ctx context.Context, ln *net.UnixListener, allowPeer func(sock.Peer) bool) error {
	var conns sync.WaitGroup
	defer conns.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	g.log.Printf("serving %s", ln.Addr())
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		conns.Go(func() { g.serveBrokerConn(ctx, c, allowPeer) })
	}
}

// frames reads envelopes off a connection in the background; closed ends
// when the stream does, with err saying why.
type frames struct {
	next   chan wire.Envelope
	closed chan struct{}
	err    error
}

func readFrames(r io.Reader, done <-chan struct{}) *frames {
	f := &frames{next: make(chan wire.Envelope), closed: make(chan struct{})}
	br := bufio.NewReader(r)
	go func() {
		for {
			e, err := wire.ReadEnvelope(br)
			if err != nil {
				f.err = err
				close(f.closed)
				return
			}
			select {
			case f.next <- e:
			case <-done:
				return
			}
		}
	}()
	return f
}

// serveBrokerConn answers approval_request after approval_request on one
// connection; each is held until it is decided, withdrawn or expired.
func (g *gateway) serveBrokerConn(ctx context.Context, c *net.UnixConn, allowPeer func(sock.Peer) bool) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	peer, err := sock.PeerOf(c)
	if err != nil || !allowPeer(peer) {
		g.log.Printf("gateway.sock: refused a connection from uid %d pid %d (%v)", peer.UID, peer.PID, err)
		refuse(c, 0, wire.BadMessage, "this socket does not accept your uid")
		return
	}
	done := make(chan struct{})
	defer close(done)
	in := readFrames(c, done)
	for {
		var e wire.Envelope
		select {
		case e = <-in.next:
		case <-in.closed:
			g.refuseBadFrame(c, peer, in.err)
			return
		case <-ctx.Done():
			return
		}
		req, ok := e.Msg.(wire.ApprovalRequest)
		if !ok {
			g.log.Printf("gateway.sock: uid %d sent %s, which this socket does not accept; closing", peer.UID, wire.KindOf(e.Msg))
			refuse(c, e.ID, wire.BadMessage, fmt.Sprintf("kind %s is not accepted on this socket", wire.KindOf(e.Msg)))
			return
		}
		if err := checkRequest(req); err != nil {
			g.log.Printf("gateway.sock: uid %d: %v; closing", peer.UID, err)
			refuse(c, e.ID, wire.BadMessage, err.Error())
			return
		}
		d, ok := g.approvals.await(ctx, req, in.closed)
		if !ok {
			return
		}
		if err := wire.WriteEnvelope(c, wire.Envelope{ID: e.ID, Final: true, Msg: d}); err != nil {
			g.log.Printf("approval %s: the decision did not reach brokerd (%v); it is answered again when brokerd offers it again", d.Approval, err)
			return
		}
	}
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

// refuseBadFrame answers a frame that could not be read, unless the stream
// simply ended (brokerd closing, which is how it withdraws).
func (g *gateway) refuseBadFrame(c *net.UnixConn, peer sock.Peer, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	g.log.Printf("gateway.sock: uid %d: %v; closing", peer.UID, err)
	detail := err.Error()
	var we wire.WireError
	if errors.As(err, &we) {
		detail = we.Detail
	}
	refuse(c, 0, wire.CodeOf(err), detail)
}

// refuse writes an error frame and ends the connection, reading what the
// peer still sends for a moment so that it gets the frame rather than a
// reset.
func refuse(c *net.UnixConn, id uint64, code wire.ErrorCode, detail string) {
	_ = wire.WriteEnvelope(c, wire.Envelope{ID: id, Final: true, Msg: wire.WireError{Code: code, Detail: detail}})
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, wire.MaxFrame+4))
}

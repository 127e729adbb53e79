package egressd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"boxmaker/policy"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/net/http/httpguts"
)

// openKind is the one kind brokerd may send on egress.sock.
const openKind = "egress_open"

// serveConn serves one connection from brokerd: any number of egress_open
// frames, each with its descriptor. Anything wrong is answered with an error
// frame and ends the connection; the listener keeps serving others.
func (s *server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	peer, err := sock.PeerOf(c)
	if err != nil || !s.allowPeer(peer) {
		s.log.Printf("refused a connection from uid %d pid %d (%v)", peer.UID, peer.PID, err)
		writeError(c, 0, wire.BadMessage, "this socket does not accept your uid")
		return
	}
	for s.serveFrame(ctx, c, peer) {
	}
}

// serveFrame reads and answers one frame, and reports whether the
// connection stays open.
func (s *server) serveFrame(ctx context.Context, c *net.UnixConn, peer sock.Peer) bool {
	e, f, err := fdpass.ReceiveFrameWithFile(c)
	if e.Msg != nil && wire.KindOf(e.Msg) != openKind {
		closeFile(f)
		err = badMessage("kind %s is not accepted on egress.sock", wire.KindOf(e.Msg))
	}
	if err == nil {
		err = s.open(ctx, c, e, f)
	}
	if err == nil {
		return true
	}
	if !streamEnded(err) {
		s.log.Printf("uid %d: %v; closing the connection", peer.UID, err)
		writeError(c, e.ID, wire.CodeOf(err), detailOf(err))
	}
	return false
}

// open checks an egress_open frame and its descriptor, answers egress_ready
// and starts the call. The descriptor is always consumed: served or closed.
func (s *server) open(ctx context.Context, c *net.UnixConn, e wire.Envelope, f *os.File) error {
	grant, err := grantOf(e.Msg.(wire.EgressOpen))
	if err != nil {
		f.Close()
		return err
	}
	conn, err := sandboxConn(f)
	if err != nil {
		return err
	}
	select {
	case s.slots <- struct{}{}:
	default:
		conn.Close()
		return wire.WireError{Code: wire.Internal, Detail: fmt.Sprintf("%d calls are in flight already", maxCalls)}
	}
	if err := wire.WriteEnvelope(c, wire.Envelope{ID: e.ID, Final: true, Msg: wire.EgressReady{}}); err != nil {
		<-s.slots
		conn.Close()
		return err
	}
	s.calls.Go(func() {
		defer func() { <-s.slots }()
		s.serveCall(ctx, conn, grant)
	})
	return nil
}

// grantOf checks what one egress_open allows.
func grantOf(open wire.EgressOpen) (callGrant, error) {
	hosts, err := policy.ParseHostSet(open.Hosts)
	if err != nil {
		return callGrant{}, badMessage("hosts: %v", err)
	}
	if open.Authorization != nil && (*open.Authorization == "" || !httpguts.ValidHeaderFieldValue(*open.Authorization)) {
		// The value itself is never repeated: it is a secret.
		return callGrant{}, badMessage("the authorization value is empty or not a valid header value")
	}
	if open.Method != "GET" && open.Method != "POST" {
		return callGrant{}, badMessage("method %.20q: a call may use GET or POST", open.Method)
	}
	return callGrant{hosts: hosts, method: open.Method, secret: newSecret(open.Authorization)}, nil
}

// sandboxConn turns the passed descriptor into a connection; it must be a
// Unix stream socket, one end of brokerd's socketpair. f is closed.
func sandboxConn(f *os.File) (net.Conn, error) {
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, badMessage("the descriptor is not a socket: %v", err)
	}
	if _, ok := conn.(*net.UnixConn); !ok {
		conn.Close()
		return nil, badMessage("the descriptor is not a Unix socket")
	}
	return conn, nil
}

func badMessage(format string, args ...any) error {
	return wire.WireError{Code: wire.BadMessage, Detail: fmt.Sprintf(format, args...)}
}

// streamEnded reports whether err only says that brokerd went away.
func streamEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// detailOf is the error's text without its code, which the frame carries
// on its own.
func detailOf(err error) string {
	var we wire.WireError
	if errors.As(err, &we) {
		return we.Detail
	}
	return err.Error()
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func writeError(c *net.UnixConn, id uint64, code wire.ErrorCode, detail string) {
	_ = wire.WriteEnvelope(c, wire.Envelope{ID: id, Final: true, Msg: wire.WireError{Code: code, Detail: detail}})
}

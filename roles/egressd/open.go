package egressd

import (
	"context"
	"fmt"
	"net"
	"os"

	"boxmaker/policy"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/net/http/httpguts"
)

// open checks an egress_open frame and its descriptor, answers egress_ready
// and starts the call, which lives on with ctx, egressd's own: brokerd's
// connection is done with once the call is ready. The descriptor is always
// consumed: served or closed. A frame it cannot serve is refused, which
// answers brokerd with the reason and ends the connection.
func (s *server) open(ctx context.Context, e wire.Envelope, f *os.File, reply sock.Replier) error {
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
		return sock.Refusal{Code: wire.Internal, Detail: fmt.Sprintf("%d calls are in flight already", maxCalls)}
	}
	if err := reply(wire.Envelope{Final: true, Msg: wire.EgressReady{}}); err != nil {
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

// badMessage refuses a frame egressd cannot serve as it stands.
func badMessage(format string, args ...any) error {
	return sock.Refusal{Code: wire.BadMessage, Detail: fmt.Sprintf(format, args...)}
}

package fdpass

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"boxmaker/wire"
)

// openID is the id of the one request OpenEgress sends on its connection.
const openID = 1

// OpenEgress asks egressd, listening at socketPath, to serve one call's web
// access: it makes a socketpair, sends one end to egressd with the call's
// hosts entries and the Authorization value egressd is to add (nil for
// none), waits for egress_ready and returns the other end, which becomes the
// sandbox's fd 3. egressd serves exactly one HTTP request on it.
//
// ctx bounds the whole exchange with egressd. The secret travels only on
// egress.sock; the returned end never sees it.
func OpenEgress(ctx context.Context, socketPath string, hosts []string, method string, authorization *string) (*os.File, error) {
	if len(hosts) == 0 {
		return nil, errors.New("egress: no hosts entries; egressd would allow nothing")
	}
	sandboxEnd, egressEnd, err := socketpair()
	if err != nil {
		return nil, err
	}
	// Ours is closed in every case: after the send egressd holds its own.
	defer egressEnd.Close()
	if err := askEgressd(ctx, socketPath, wire.EgressOpen{Hosts: hosts, Method: method, Authorization: authorization}, egressEnd); err != nil {
		sandboxEnd.Close()
		return nil, err
	}
	return sandboxEnd, nil
}

// askEgressd sends open with egressEnd on a fresh connection and waits for
// egress_ready.
func askEgressd(ctx context.Context, socketPath string, open wire.Message, egressEnd *os.File) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	err = SendFrameWithFile(conn, wire.Envelope{ID: openID, Final: true, Msg: open}, egressEnd)
	if err == nil {
		err = awaitReady(conn)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("egress: %w", ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	return nil
}

func awaitReady(conn *net.UnixConn) error {
	reply, err := wire.ReadEnvelope(conn)
	if err != nil {
		return err
	}
	switch m := reply.Msg.(type) {
	case wire.EgressReady:
		if reply.ID != openID || !reply.Final {
			return fmt.Errorf("egressd answered request %d (final %v), want %d", reply.ID, reply.Final, openID)
		}
		return nil
	case wire.WireError:
		return fmt.Errorf("egressd refused: %w", m)
	}
	return fmt.Errorf("egressd answered %s, want egress_ready", wire.KindOf(reply.Msg))
}

// socketpair returns two connected Unix stream sockets, close-on-exec: the
// sandbox runner chooses which descriptors a child inherits.
func socketpair() (sandboxEnd, egressEnd *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "egress-sandbox"), os.NewFile(uintptr(fds[1]), "egress-egressd"), nil
}

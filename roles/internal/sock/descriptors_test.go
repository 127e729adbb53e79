package sock

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// descriptorServer serves a socket whose frames carry a descriptor: the
// handler of egress_open writes the request's id into the descriptor it
// got (one end of the test's socketpair) and answers egress_ready. Id 1
// first waits for release, reporting its ctx's cause on causes.
func descriptorServer(t *testing.T, release <-chan struct{}, started chan<- struct{}, causes chan<- error) string {
	return serve(t, &Server{
		Name: "descriptor socket", Accepts: []string{"egress_open"}, AllowPeer: anyPeer, Log: logTo(io.Discard),
		Descriptors: true,
		HandleFile: func(ctx context.Context, _ Peer, req wire.Envelope, f *os.File, reply Replier) error {
			defer f.Close()
			if req.ID == 1 {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					causes <- context.Cause(ctx)
					return ctx.Err()
				case <-release:
					causes <- nil
				}
			}
			if _, err := f.Write([]byte{byte(req.ID)}); err != nil {
				return err
			}
			return reply(wire.Envelope{Final: true, Msg: wire.EgressReady{}})
		},
	})
}

// sendWithFile writes the frame of e with a fresh socketpair end beside it
// and returns the other end, on which the handler's write arrives.
func sendWithFile(t *testing.T, c *net.UnixConn, e wire.Envelope) *os.File {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[1])
	mine := os.NewFile(uintptr(fds[0]), "test end")
	t.Cleanup(func() { mine.Close() })
	if _, _, err := c.WriteMsgUnix(frame(t, e), syscall.UnixRights(fds[1]), nil); err != nil {
		t.Fatal(err)
	}
	return mine
}

func dialUnix(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func egressOpen(id uint64) wire.Envelope {
	return wire.Envelope{ID: id, Final: true, Msg: wire.EgressOpen{Method: "GET", Hosts: []string{"a.example"}}}
}

// A frame sent while the previous request is in flight keeps its own
// descriptor: the background watch only peeks, so fdpass still reads the
// frame and its descriptor together, and the handler's ctx stays alive.
func TestPipelinedDescriptorIsKept(t *testing.T) {
	release, started, causes := make(chan struct{}), make(chan struct{}, 1), make(chan error, 1)
	c := dialUnix(t, descriptorServer(t, release, started, causes))
	first := sendWithFile(t, c, egressOpen(1))
	receive(t, "the first handler to start", started)
	second := sendWithFile(t, c, egressOpen(2))
	close(release)
	if cause := receive(t, "the first handler to finish", causes); cause != nil {
		t.Fatalf("handler cancelled (%v) by a pipelined frame", cause)
	}
	for i, f := range []*os.File{first, second} {
		_ = f.SetReadDeadline(time.Now().Add(patience))
		b := make([]byte, 1)
		if _, err := io.ReadFull(f, b); err != nil || b[0] != byte(i+1) {
			t.Errorf("descriptor of request %d: got %v (%v)", i+1, b, err)
		}
	}
}

// A handler of a descriptor frame is cancelled when its peer hangs up, as
// any handler is.
func TestDescriptorPeerHangupCancelsHandler(t *testing.T) {
	release, started, causes := make(chan struct{}), make(chan struct{}, 1), make(chan error, 1)
	c := dialUnix(t, descriptorServer(t, release, started, causes))
	sendWithFile(t, c, egressOpen(1))
	receive(t, "the handler to start", started)
	c.Close()
	if cause := receive(t, "the handler's ctx to end", causes); cause != ErrPeerGone {
		t.Fatalf("cause %v, want ErrPeerGone", cause)
	}
}

// A frame without its descriptor is bad_message, answered with the
// request's id; the connection then ends.
func TestFrameWithoutDescriptorIsRefused(t *testing.T) {
	c := dialUnix(t, descriptorServer(t, nil, nil, nil))
	if _, err := c.Write(frame(t, egressOpen(7))); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(patience))
	e, err := wire.ReadEnvelope(c)
	werr, ok := e.Msg.(wire.WireError)
	if err != nil || !ok || werr.Code != wire.BadMessage || e.ID != 7 || !bytes.Contains([]byte(werr.Detail), []byte("descriptor")) {
		t.Fatalf("got %#v, %v; want bad_message about the descriptor, id 7", e, err)
	}
	if _, err := wire.ReadEnvelope(c); err != io.EOF {
		t.Errorf("the connection stayed open (%v)", err)
	}
}

package sock

import (
	"bufio"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/fixtures/poll"
	"boxmaker/wire"
)

// patience bounds every wait in these tests; the conditions they wait for
// take milliseconds, so reaching it means the behaviour is missing.
const patience = 5 * time.Second

// testFrameTimeout is a FrameTimeout short enough to wait past in a test.
const testFrameTimeout = 50 * time.Millisecond

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Within(t, patience, what, cond)
}

// receive waits for a value from ch, failing the test after patience.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("gave up after %v waiting for %s", patience, what)
		panic("unreachable")
	}
}

// logBuffer collects a Server's log lines for a test to read while the
// server still writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func sessionNamed(t *testing.T, name string) wire.SessionID {
	t.Helper()
	s, err := wire.ParseSessionID(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// blockingHandler answers session "wait" only when its ctx ends or release
// closes, reporting the ctx's cause on causes (nil if released); first it
// sends a partial frame if partial is set. Other sessions are answered at
// once, so the tests can check that the server still serves.
func blockingHandler(t *testing.T, partial bool, started chan<- struct{}, release <-chan struct{}, causes chan<- error) Handler {
	wait := sessionNamed(t, "wait")
	return func(ctx context.Context, peer Peer, req wire.Envelope, reply Replier) error {
		if req.Msg.(wire.SessionState).Session != wait {
			return stateHandler(ctx, peer, req, reply)
		}
		if partial {
			if err := reply(wire.Envelope{Msg: wire.PendingApproval{Approval: "a1", Expires: 1}}); err != nil {
				return err
			}
		}
		started <- struct{}{}
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return ctx.Err()
		case <-release:
			causes <- nil
			return stateHandler(ctx, peer, req, reply)
		}
	}
}

// A handler's context ends with ErrPeerGone when its peer hangs up, whether
// it closed cleanly or with a reply still unread (which resets the
// connection), and the connection's slot is then free for the next peer.
// Closing the descriptor is what the kernel does for a killed client too.
func TestPeerHangupCancelsHandler(t *testing.T) {
	for _, c := range []struct {
		name    string
		partial bool
		idle    time.Duration // how long the request waits before the hangup
	}{
		{"closed while waiting", false, 0},
		{"closed with a partial reply unread", true, 0},
		{"closed after waiting past FrameTimeout", false, 3 * testFrameTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			started, causes := make(chan struct{}, 1), make(chan error, 1)
			logs := &logBuffer{}
			srv := testServer(blockingHandler(t, c.partial, started, nil, causes))
			srv.MaxConns, srv.FrameTimeout, srv.Log = 1, testFrameTimeout, logTo(logs)
			path := serve(t, srv)
			conn, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write(frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: sessionNamed(t, "wait")}})); err != nil {
				t.Fatal(err)
			}
			receive(t, "the handler to start", started)
			time.Sleep(c.idle)
			select {
			case cause := <-causes:
				t.Fatalf("handler cancelled (%v) while its peer was still there", cause)
			default:
			}
			conn.Close()
			if cause := receive(t, "the handler's ctx to end", causes); !errors.Is(cause, ErrPeerGone) {
				t.Errorf("cause %v, want ErrPeerGone", cause)
			}
			waitFor(t, "a new connection to be served in the only slot", func() bool { return callOnce(t, path) == nil })
			if !strings.Contains(logs.String(), "hung up before session_state 1 was answered") {
				t.Errorf("log does not say the peer hung up:\n%s", logs)
			}
		})
	}
}

// callOnce dials and makes one session_state call.
func callOnce(t *testing.T, path string) error {
	t.Helper()
	c, err := Dial(path)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Call(context.Background(), wire.SessionState{Session: session(t)}, nil)
	return err
}

// A peer that sends its next frame while a request is in flight loses
// nothing: the byte the background read took is handed to the next read,
// and the handler's context stays alive.
func TestPipelinedFrameIsKept(t *testing.T) {
	started, release, causes := make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
	path := serve(t, testServer(blockingHandler(t, false, started, release, causes)))
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	write := func(b []byte) {
		t.Helper()
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write(frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: sessionNamed(t, "wait")}}))
	receive(t, "the handler to start", started)
	next := frame(t, wire.Envelope{ID: 2, Final: true, Msg: wire.SessionState{Session: session(t)}})
	write(next[:1])
	waitFor(t, "the background read to take the first byte", func() bool { return unreadBy(t, conn) == 0 })
	write(next[1:])
	close(release)
	if cause := receive(t, "the handler to finish", causes); cause != nil {
		t.Fatalf("handler cancelled (%v) by a pipelined frame", cause)
	}
	r := bufio.NewReader(conn)
	for _, id := range []uint64{1, 2} {
		if err := conn.SetReadDeadline(time.Now().Add(patience)); err != nil {
			t.Fatal(err)
		}
		e, err := wire.ReadEnvelope(r)
		if err != nil {
			t.Fatalf("reply %d: %v", id, err)
		}
		if _, ok := e.Msg.(wire.SessionStateResult); !ok || e.ID != id {
			t.Fatalf("got %+v, want the result of request %d", e, id)
		}
	}
}

// unreadBy reports how much of what c sent its peer has not read yet
// (SIOCOUTQ), which shows when the server's background read took a byte.
func unreadBy(t *testing.T, c *net.UnixConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioErr error
	if err := raw.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil {
		t.Fatal(err)
	}
	if ioErr != nil {
		t.Fatal(ioErr)
	}
	return n
}

// Once Serve returns, no goroutine it started is left: not the background
// reads of a hung-up, a pipelining or an ordinary peer, nor a refusal.
func TestServeLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	started, release, causes := make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
	srv := testServer(blockingHandler(t, false, started, release, causes))
	srv.MaxConns = 2
	path, stop := serveUntilStopped(t, srv)
	hungUp, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hungUp.Write(frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: sessionNamed(t, "wait")}})); err != nil {
		t.Fatal(err)
	}
	receive(t, "the handler to start", started)
	idle, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Call(context.Background(), wire.SessionState{Session: session(t)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := callOnce(t, path); err == nil {
		t.Fatal("a third connection was served past MaxConns 2")
	}
	hungUp.Close()
	receive(t, "the handler's ctx to end", causes)
	stop()
	waitFor(t, "the server's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

package sock

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/wire"
)

// Handlers that end just before, at and just after the tick on which their
// watch starts, while the peer pipelines its next frame, lose no byte and
// are never cancelled: the watchman and end agree on who stops the watch,
// and a started watch is always stopped before the next read. Run it with
// -race.
func TestWatchStartingAsHandlersEnd(t *testing.T) {
	const tick = 50 * time.Microsecond
	var cancelled atomic.Int32
	srv := testServer(func(ctx context.Context, peer Peer, req wire.Envelope, reply Replier) error {
		time.Sleep(time.Duration(req.ID%4) * tick) // 0 to 3 ticks
		if ctx.Err() != nil {
			cancelled.Add(1)
		}
		return stateHandler(ctx, peer, req, reply)
	})
	srv.watchTick = tick
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: serve(t, srv), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	request := func(id uint64) []byte {
		return frame(t, wire.Envelope{ID: id, Final: true, Msg: wire.SessionState{Session: session(t)}})
	}
	for id := uint64(1); id <= 400; id += 2 {
		// Two frames in one write: the second arrives while the first is
		// handled, so a watch that starts reads its first byte.
		if _, err := conn.Write(append(request(id), request(id+1)...)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []uint64{id, id + 1} {
			if err := conn.SetReadDeadline(time.Now().Add(patience)); err != nil {
				t.Fatal(err)
			}
			e, err := wire.ReadEnvelope(r)
			if err != nil {
				t.Fatalf("reply %d: %v", want, err)
			}
			if _, ok := e.Msg.(wire.SessionStateResult); !ok || e.ID != want {
				t.Fatalf("got %+v, want the result of request %d", e, want)
			}
		}
	}
	if n := cancelled.Load(); n != 0 {
		t.Errorf("%d handlers were cancelled while their peer was there", n)
	}
}

// A watchman that found nothing to do sleeps, and the next handler that
// runs long wakes it: a hangup still cancels that handler.
func TestWatchmanWakesForTheNextHandler(t *testing.T) {
	started, causes := make(chan struct{}, 1), make(chan error, 1)
	srv := testServer(blockingHandler(t, false, started, nil, causes))
	path := serve(t, srv)
	if err := callOnce(t, path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * defaultWatchTick) // several ticks with nothing running: the watchman sleeps
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: sessionNamed(t, "wait")}})); err != nil {
		t.Fatal(err)
	}
	receive(t, "the handler to start", started)
	conn.Close()
	if cause := receive(t, "the handler's ctx to end", causes); cause != ErrPeerGone {
		t.Fatalf("cause %v, want ErrPeerGone", cause)
	}
}

package sock

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

func logTo(w io.Writer) *log.Logger { return log.New(w, "", 0) }

// A peer that sends part of a frame and goes silent gets a bad_frame error
// and is dropped once FrameTimeout has passed, and the log says so; another
// peer is served meanwhile.
func TestHalfFrameIsDropped(t *testing.T) {
	const limit = 200 * time.Millisecond
	logs := &logBuffer{}
	srv := testServer(stateHandler)
	srv.FrameTimeout, srv.Log = limit, logTo(logs)
	path := serve(t, srv)
	half, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	whole := frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: session(t)}})
	sent := time.Now()
	if _, err := half.Write(whole[:len(whole)/2]); err != nil {
		t.Fatal(err)
	}
	if err := callOnce(t, path); err != nil {
		t.Fatalf("another peer was not served meanwhile: %v", err)
	}
	if err := half.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	e, err := wire.ReadEnvelope(half)
	if err != nil {
		t.Fatalf("no error frame for the half frame: %v", err)
	}
	if waited := time.Since(sent); waited < limit {
		t.Errorf("dropped after %v, before FrameTimeout %v", waited, limit)
	}
	if we, ok := e.Msg.(wire.WireError); !ok || we.Code != wire.BadFrame || !strings.Contains(we.Detail, "did not arrive within 200ms") {
		t.Errorf("got %+v, want bad_frame saying the frame did not arrive within 200ms", e)
	}
	if _, err := wire.ReadEnvelope(half); !errors.Is(err, io.EOF) {
		t.Errorf("connection not closed after the error frame: %v", err)
	}
	waitFor(t, "the log to say why", func() bool { return strings.Contains(logs.String(), "did not arrive within 200ms; closing") })
}

// A frame written in pieces is served when its last piece arrives within
// FrameTimeout of its first.
func TestFrameInPiecesIsServed(t *testing.T) {
	srv := testServer(stateHandler)
	srv.FrameTimeout = time.Second
	path := serve(t, srv)
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	whole := frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: session(t)}})
	for _, piece := range [][]byte{whole[:2], whole[2:10], whole[10:]} {
		if _, err := c.Conn().Write(piece); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // under FrameTimeout in all
	}
	if err := c.Conn().SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if e, err := wire.ReadEnvelope(c.Conn()); err != nil || e.ID != 1 {
		t.Fatalf("got %+v, %v; want the result of request 1", e, err)
	}
}

// FrameTimeout starts at a frame's first byte: a connection idle for longer,
// before its first frame or between frames, is still served, and a frame
// that then stalls on it is still dropped.
func TestIdleConnectionIsNotTimedOut(t *testing.T) {
	const limit = 100 * time.Millisecond
	srv := testServer(stateHandler)
	srv.FrameTimeout = limit
	path := serve(t, srv)
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		time.Sleep(3 * limit) // idle, then the call below must still work
		if _, err := c.Call(context.Background(), wire.SessionState{Session: session(t)}, nil); err != nil {
			t.Fatalf("call %d after idling %v: %v", i+1, 3*limit, err)
		}
	}
	if _, err := c.Conn().Write([]byte{0, 0, 0, 100}); err != nil {
		t.Fatal(err)
	}
	if err := c.Conn().SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	e, err := wire.ReadEnvelope(c.Conn())
	if we, ok := e.Msg.(wire.WireError); err != nil || !ok || we.Code != wire.BadFrame {
		t.Fatalf("got %+v, %v; want the stalled frame dropped with bad_frame", e, err)
	}
}

// One connection past MaxConns gets one error frame that names the socket
// and the limit, and is closed; the connections already open are served,
// and a slot freed by a closed one is reused.
func TestMaxConns(t *testing.T) {
	logs := &logBuffer{}
	srv := testServer(stateHandler)
	srv.MaxConns, srv.Log = 2, logTo(logs)
	path := serve(t, srv)
	var open []*Client
	for range 2 {
		c, err := Dial(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Call(context.Background(), wire.SessionState{Session: session(t)}, nil); err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	err := callOnce(t, path)
	var we wire.WireError
	if !errors.As(err, &we) || we.Code != wire.Internal || we.Detail != "test socket: too many connections (limit 2)" {
		t.Fatalf("third connection got %v, want internal: test socket: too many connections (limit 2)", err)
	}
	if !strings.Contains(logs.String(), "refused a connection") {
		t.Errorf("log does not mention the refusal:\n%s", logs)
	}
	for i, c := range open {
		if _, err := c.Call(context.Background(), wire.SessionState{Session: session(t)}, nil); err != nil {
			t.Errorf("connection %d no longer served: %v", i+1, err)
		}
	}
	open[0].Close()
	waitFor(t, "the freed slot to be reused", func() bool { return callOnce(t, path) == nil })
}

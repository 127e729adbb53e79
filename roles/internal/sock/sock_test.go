package sock

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"boxmaker/wire"
)

func session(t *testing.T) wire.SessionID {
	s, err := wire.ParseSessionID("s1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startServer serves a socket that accepts session_state and answers it
// with handle, with the default bounds and a discarded log.
func startServer(t *testing.T, allow func(Peer) bool, handle Handler) string {
	t.Helper()
	srv := testServer(handle)
	srv.AllowPeer = allow
	return serve(t, srv)
}

// testServer is a Server for session_state that admits any peer.
func testServer(handle Handler) *Server {
	return &Server{Name: "test socket", Accepts: []string{"session_state"}, AllowPeer: anyPeer, Handle: handle, Log: log.New(io.Discard, "", 0)}
}

// serve runs srv on a fresh socket until the test ends.
func serve(t *testing.T, srv *Server) string {
	t.Helper()
	path, stop := serveUntilStopped(t, srv)
	t.Cleanup(stop)
	return path
}

// serveUntilStopped runs srv on a fresh socket; stop ends it and fails the
// test if Serve does not return cleanly. Serve waits for every
// connection's goroutines, so one that never ends hangs the test there.
func serveUntilStopped(t *testing.T, srv *Server) (path string, stop func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "pair", "test.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return path, sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

func anyPeer(Peer) bool { return true }

func stateHandler(_ context.Context, peer Peer, req wire.Envelope, reply Replier) error {
	q := req.Msg.(wire.SessionState)
	return reply(wire.Envelope{Final: true, Msg: wire.SessionStateResult{Session: q.Session, Taint: wire.Private}})
}

func TestCallAndPeer(t *testing.T) {
	var seen Peer
	path := startServer(t, func(p Peer) bool { seen = p; return true }, stateHandler)
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		got, err := c.Call(context.Background(), wire.SessionState{Session: session(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := got.(wire.SessionStateResult); !ok || r.Taint != wire.Private {
			t.Fatalf("got %#v", got)
		}
	}
	if seen.UID != uint32(os.Getuid()) || seen.PID != int32(os.Getpid()) {
		t.Errorf("peer %+v, want uid %d pid %d", seen, os.Getuid(), os.Getpid())
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != SocketMode {
		t.Errorf("socket mode %v (%v)", fi.Mode(), err)
	}
}

// rawExchange writes raw bytes and returns every envelope until the server closes.
func rawExchange(t *testing.T, path string, raw []byte) []wire.Envelope {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	var got []wire.Envelope
	r := bufio.NewReader(c)
	for {
		e, err := wire.ReadEnvelope(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("reading replies: %v", err)
			}
			return got
		}
		got = append(got, e)
	}
}

func frame(t *testing.T, e wire.Envelope) []byte {
	b, err := wire.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// A refused kind, a bad frame or a bad message each get one error frame,
// then the connection closes, and the server goes on serving others.
func TestRefusals(t *testing.T) {
	path := startServer(t, anyPeer, stateHandler)
	for _, c := range []struct {
		name   string
		raw    []byte
		id     uint64
		code   wire.ErrorCode
		detail string
	}{
		{"kind not accepted", frame(t, wire.Envelope{ID: 9, Final: true, Msg: wire.ApprovalAnswer{Approval: "a", Approve: true}}), 9, wire.BadMessage, "kind approval_answer is not accepted"},
		{"zero length", []byte{0, 0, 0, 0}, 0, wire.BadFrame, "frame length 0"},
		{"over max", []byte{0, 0x10, 0, 1}, 0, wire.BadFrame, "frame length 1048577"},
		{"not json", append([]byte{0, 0, 0, 5}, "hello"...), 0, wire.BadMessage, "invalid JSON"},
		{"version 2", append([]byte{0, 0, 0, 9}, `{"v":2}  `...), 0, wire.BadVersion, "v 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := rawExchange(t, path, c.raw)
			if len(got) != 1 {
				t.Fatalf("got %d replies, want one error: %+v", len(got), got)
			}
			we, ok := got[0].Msg.(wire.WireError)
			if !ok || got[0].ID != c.id || we.Code != c.code || !strings.Contains(we.Detail, c.detail) {
				t.Errorf("got %+v, want id %d %s %q", got[0], c.id, c.code, c.detail)
			}
		})
	}
	t.Run("still serving", func(t *testing.T) {
		got := rawExchange(t, path, append(frame(t, wire.Envelope{ID: 3, Final: true, Msg: wire.SessionState{Session: session(t)}}),
			frame(t, wire.Envelope{ID: 4, Final: true, Msg: wire.ToolList{Session: session(t)}})...))
		if len(got) != 2 || got[0].ID != 3 || got[1].ID != 4 {
			t.Fatalf("got %+v", got)
		}
		if _, ok := got[1].Msg.(wire.WireError); !ok {
			t.Errorf("second request was answered %+v", got[1])
		}
	})
}

func TestPeerRefused(t *testing.T) {
	path := startServer(t, func(Peer) bool { return false }, stateHandler)
	got := rawExchange(t, path, frame(t, wire.Envelope{ID: 1, Final: true, Msg: wire.SessionState{Session: session(t)}}))
	if len(got) != 1 || !strings.Contains(got[0].Msg.(wire.WireError).Detail, "does not accept your uid") {
		t.Fatalf("got %+v", got)
	}
}

func TestHandlerWithoutFinalFrame(t *testing.T) {
	path := startServer(t, anyPeer, func(context.Context, Peer, wire.Envelope, Replier) error { return nil })
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(context.Background(), wire.SessionState{Session: session(t)}, nil)
	if wire.CodeOf(err) != wire.Internal {
		t.Fatalf("got %v, want an internal error", err)
	}
}

func TestListenReplacesOnlyStaleSockets(t *testing.T) {
	path := startServer(t, anyPeer, stateHandler)
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("a live socket was replaced (%v)", err)
	}
	stale := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	ln2, err := Listen(stale)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
	regular := filepath.Join(t.TempDir(), "file")
	os.WriteFile(regular, nil, 0o600)
	if _, err := Listen(regular); err == nil {
		t.Fatal("a regular file was replaced by a socket")
	}
}

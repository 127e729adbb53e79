package sock

import (
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"boxmaker/wire"
)

// The HTTP gate admits at accept: a uid it does not allow and a connection
// past MaxConns go to Refuse, each with its reason, and a closed
// connection gives its slot back.
func TestListenerAdmitsAtAccept(t *testing.T) {
	ln, err := Listen(filepath.Join(t.TempDir(), "run", "infer.sock"))
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan wire.ErrorCode, 4)
	l, err := ListenerFor(ln, "loopd", "inferproxy", func(c *net.UnixConn, why Refusal) {
		c.Close()
		refused <- why.Code
	}, logTo(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var allow atomic.Bool
	allow.Store(true)
	l.AllowPeer, l.MaxConns = func(Peer) bool { return allow.Load() }, 1
	admitted := make(chan net.Conn, 4)
	go func() {
		for c, err := l.Accept(); err == nil; c, err = l.Accept() {
			admitted <- c
		}
	}()
	dial := func() {
		c, err := net.Dial("unix", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	dial()
	first := receive(t, "the first connection", admitted)
	dial()
	if code := receive(t, "the second connection's refusal", refused); code != wire.Internal {
		t.Errorf("past MaxConns: %s, want internal", code)
	}
	first.Close()
	first.Close() // net/http may close twice; the slot is given back once
	dial()
	receive(t, "a connection after the first closed", admitted).Close()
	allow.Store(false)
	dial()
	if code := receive(t, "the refusal of a uid", refused); code != wire.BadMessage {
		t.Errorf("a uid not allowed: %s, want bad_message", code)
	}
}

// A pair that speaks frames has no HTTP gate.
func TestListenerForRefusesAFramePair(t *testing.T) {
	if _, err := ListenerFor(nil, "loopd", "brokerd", nil, logTo(io.Discard)); err == nil {
		t.Error("ListenerFor(loopd, brokerd) gave a listener")
	}
}

package bxctl

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"boxmaker/wire"
)

// fakeLoopd answers loop.sock in a home as loopd would, from a script:
// each request is answered with the messages answer gives, the last one
// final; a nil last message instead closes the connection after the others,
// as a loopd that died mid-turn. It speaks the wire by hand, so that what
// the client sees is just frames.
type fakeLoopd struct {
	t      *testing.T
	path   string
	answer func(wire.Message) []wire.Message

	mu    sync.Mutex
	ln    *net.UnixListener
	conns []net.Conn
	seen  []wire.Message
	drop  int // connections still to close unread, as a loopd that restarted
}

func startFakeLoopd(t *testing.T, home string, answer func(wire.Message) []wire.Message) *fakeLoopd {
	t.Helper()
	f := &fakeLoopd{t: t, path: filepath.Join(home, "run", "bxctl-loopd", "loop.sock"), answer: answer}
	f.start()
	t.Cleanup(f.stop)
	return f
}

// start listens (again) on the socket.
func (f *fakeLoopd) start() {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	os.Remove(f.path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: f.path, Net: "unix"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	go f.accept(ln)
}

// stop closes the socket and every connection, as a loopd that died.
func (f *fakeLoopd) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ln.Close()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

func (f *fakeLoopd) accept(ln *net.UnixListener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		drop := f.drop > 0
		f.drop--
		f.mu.Unlock()
		if drop {
			c.Close()
			continue
		}
		go f.serve(c)
	}
}

func (f *fakeLoopd) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		req, err := wire.ReadEnvelope(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, req.Msg)
		f.mu.Unlock()
		msgs := f.answer(req.Msg)
		for i, m := range msgs {
			if m == nil {
				c.Close()
				return
			}
			if err := wire.WriteEnvelope(c, wire.Envelope{ID: req.ID, Final: i == len(msgs)-1, Msg: m}); err != nil {
				return
			}
		}
	}
}

// requests are the messages the fake was sent, in order.
func (f *fakeLoopd) requests() []wire.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.Message(nil), f.seen...)
}

// dropNext makes the fake close the next n connections unread.
func (f *fakeLoopd) dropNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop = n
}

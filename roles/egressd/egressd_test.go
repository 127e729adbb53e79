package egressd

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

func TestFetchThroughADescriptor(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/a/b" || r.URL.RawQuery != "q=1" {
			t.Errorf("upstream got %s", r.URL)
		}
		hello(w, r)
	})
	resp, body := h.get([]string{up.hostPort()}, up.URL+"/a/b?q=1")
	if resp.StatusCode != http.StatusOK || body != "hello" || resp.Header.Get(truncatedHeader) != "" {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
	want := "GET https://" + up.hostPort() + " -> 200, 5 bytes"
	if !strings.Contains(h.logs.String(), want) {
		t.Errorf("log %q lacks %q", h.logs, want)
	}
	if strings.Contains(h.logs.String(), "/a/b") {
		t.Errorf("log %q names the path", h.logs)
	}
}

func TestMainServesUntilItsContextEnds(t *testing.T) {
	dir, err := os.MkdirTemp("", "egressd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd := Command()
	go func() { done <- cmd.Run(ctx, []string{"egressd", "--home", dir}) }()
	path := filepath.Join(dir, "run", "brokerd-egressd", "egress.sock")
	poll.Until(t, "egressd to be ready", func() bool {
		end, err := fdpass.OpenEgress(context.Background(), path, []string{"a.example"}, "GET", nil)
		if err == nil {
			end.Close()
		}
		return err == nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("egressd did not stop")
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there: %v", err)
	}
}

// rawConn dials egress.sock as brokerd does.
func rawConn(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// wantErrorAndClose reads one error frame of code want, then the end.
func wantErrorAndClose(t *testing.T, c *net.UnixConn, want wire.ErrorCode, what string) {
	t.Helper()
	e, err := wire.ReadEnvelope(c)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if werr, ok := e.Msg.(wire.WireError); !ok || werr.Code != want {
		t.Fatalf("%s: got %#v, want a %s error", what, e.Msg, want)
	}
	if _, err := wire.ReadEnvelope(c); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: the connection stayed open (%v)", what, err)
	}
}

// socketpairEnds returns both ends of a socketpair: the sandbox's as a
// connection, brokerd's to send to egressd as a file.
func socketpairEnds(t *testing.T) (net.Conn, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sandboxFile := os.NewFile(uintptr(fds[0]), "sandbox")
	defer sandboxFile.Close()
	sandbox, err := net.FileConn(sandboxFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sandbox.Close() })
	egress := os.NewFile(uintptr(fds[1]), "egress")
	t.Cleanup(func() { egress.Close() })
	return sandbox, egress
}

// wantClosed checks that nobody holds the other end of sandbox any more.
func wantClosed(t *testing.T, sandbox net.Conn, what string) {
	t.Helper()
	_ = sandbox.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := sandbox.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("%s: egressd kept the descriptor (%d, %v)", what, n, err)
	}
}

func TestEgressSockRefusesAllButEgressOpen(t *testing.T) {
	h := startEgressd(t, Options{})
	bad := "x\r\ny"
	cases := []struct {
		name string
		msg  wire.Message
		noFD bool
		code wire.ErrorCode
	}{
		{"no descriptor", wire.EgressOpen{Method: "GET", Hosts: []string{"a.example"}}, true, wire.BadMessage},
		{"another kind", wire.EgressReady{}, false, wire.BadMessage},
		{"another kind without a descriptor", wire.ApprovalList{}, true, wire.BadMessage},
		{"bad hosts", wire.EgressOpen{Method: "GET", Hosts: []string{"https://a.example/"}}, false, wire.BadMessage},
		{"empty hosts", wire.EgressOpen{Method: "GET", Hosts: []string{}}, false, wire.BadMessage},
		{"bad authorization", wire.EgressOpen{Method: "GET", Hosts: []string{"a.example"}, Authorization: &bad}, false, wire.BadMessage},
	}
	for _, c := range cases {
		conn := rawConn(t, h.path)
		e := wire.Envelope{ID: 9, Final: true, Msg: c.msg}
		if c.noFD {
			if err := wire.WriteEnvelope(conn, e); err != nil {
				t.Fatal(err)
			}
			wantErrorAndClose(t, conn, c.code, c.name)
			continue
		}
		sandbox, egress := socketpairEnds(t)
		if err := fdpass.SendFrameWithFile(conn, e, egress); err != nil {
			t.Fatal(err)
		}
		egress.Close()
		wantErrorAndClose(t, conn, c.code, c.name)
		wantClosed(t, sandbox, c.name)
	}
	conn := rawConn(t, h.path)
	if _, err := conn.Write([]byte{0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	wantErrorAndClose(t, conn, wire.BadFrame, "empty frame")
	// egressd keeps serving after every one of those.
	up := newUpstream(t, true, hello)
	if resp, body := h.get([]string{up.hostPort()}, up.URL); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Fatalf("after the bad frames: %d %q", resp.StatusCode, body)
	}
}

func TestSeveralOpensOnOneConnection(t *testing.T) {
	h := startEgressd(t, Options{})
	conn := rawConn(t, h.path)
	for id := range uint64(3) {
		sandbox, egress := socketpairEnds(t)
		e := wire.Envelope{ID: id + 1, Final: true, Msg: wire.EgressOpen{Method: "GET", Hosts: []string{"a.example"}}}
		if err := fdpass.SendFrameWithFile(conn, e, egress); err != nil {
			t.Fatal(err)
		}
		egress.Close()
		reply, err := wire.ReadEnvelope(conn)
		if _, ok := reply.Msg.(wire.EgressReady); err != nil || !ok || reply.ID != id+1 {
			t.Fatalf("open %d: %#v, %v", id+1, reply, err)
		}
		sandbox.Close()
	}
}

func TestPeerWithAnotherUIDIsRefused(t *testing.T) {
	h := startEgressd(t, Options{AllowPeer: func(p sock.Peer) bool { return p.UID != uint32(os.Getuid()) }})
	conn := rawConn(t, h.path)
	wantErrorAndClose(t, conn, wire.BadMessage, "wrong uid")
	if !strings.Contains(h.logs.String(), "refused a connection from uid") {
		t.Errorf("log %q does not say why", h.logs)
	}
}

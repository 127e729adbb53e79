package egressd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/wire"
)

// mcpSandbox is the sandbox's side of a remote MCP channel, as toolkit
// mcp holds it: the channel, and a client whose every connection is a
// fresh socketpair sent on it.
type mcpSandbox struct {
	t     *testing.T
	ch    *net.UnixConn
	dials atomic.Int32
}

// openMCP asks egressd for a channel to url with auth.
func (h *harness) openMCP(url string, auth *string) *mcpSandbox {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end, err := fdpass.OpenMCPEgress(ctx, h.path, wire.McpURL(url), auth)
	if err != nil {
		h.t.Fatalf("OpenMCPEgress: %v", err)
	}
	c, err := net.FileConn(end)
	end.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	sb := &mcpSandbox{t: h.t, ch: c.(*net.UnixConn)}
	h.t.Cleanup(func() { sb.ch.Close() })
	return sb
}

// dial sends egressd one end of a fresh socketpair and returns the other.
func (sb *mcpSandbox) dial(context.Context, string, string) (net.Conn, error) {
	sb.dials.Add(1)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "mine"), os.NewFile(uintptr(fds[1]), "theirs")
	defer mine.Close()
	defer theirs.Close()
	if _, _, err := sb.ch.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds[1]), nil); err != nil {
		return nil, err
	}
	return net.FileConn(mine)
}

// client is an HTTP client over the channel: plain HTTP on each
// connection even for https, one request per connection (so that each
// request is dialed, and its addresses checked, afresh).
func (sb *mcpSandbox) client() *http.Client {
	return sb.clientOf(&http.Transport{DialContext: sb.dial, DialTLSContext: sb.dial, DisableKeepAlives: true, DisableCompression: true})
}

// keepAlive is a client that keeps its connections, as toolkit's does.
func (sb *mcpSandbox) keepAlive() *http.Client {
	return sb.clientOf(&http.Transport{DialContext: sb.dial, DialTLSContext: sb.dial, DisableCompression: true, MaxIdleConnsPerHost: 1})
}

func (sb *mcpSandbox) clientOf(tr *http.Transport) *http.Client {
	sb.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: 10 * time.Second,
	}
}

// do makes one request over the channel.
func (sb *mcpSandbox) do(method, url string, header http.Header, body string) (*http.Response, string) {
	sb.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		sb.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := sb.client().Do(req)
	if err != nil {
		sb.t.Fatalf("%s %s over the channel: %v", method, url, err)
	}
	defer resp.Body.Close()
	return resp, bodyOf(sb.t, resp)
}

// rawMCPConn is one connection of a channel to up, as the sandbox holds
// it, for a test that writes the bytes itself: its reads and writes end
// within poll.Patience, and it closes with the test.
func rawMCPConn(t *testing.T, up *upstream) net.Conn {
	t.Helper()
	h := startEgressd(t, Options{})
	sb := h.openMCP("http://"+up.hostPort()+"/mcp", nil)
	conn, err := sb.dial(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(poll.Patience))
	return conn
}

// openSilentStream opens a GET stream through a channel to a server that
// sends its head and then nothing; gone closes when the server sees the
// request end. The connection closes with the test.
func openSilentStream(t *testing.T) (*mcpSandbox, net.Conn, chan struct{}) {
	t.Helper()
	gone := make(chan struct{})
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	h := startEgressd(t, Options{})
	sb := h.openMCP("http://"+up.hostPort()+"/mcp", nil)
	conn, err := sb.dial(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
	head := make([]byte, 12)
	if _, err := io.ReadFull(conn, head); err != nil || string(head) != "HTTP/1.1 200" {
		t.Fatalf("the stream's head: %q %v", head, err)
	}
	return sb, conn, gone
}

package egressd

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
)

// A sandbox connection carries one request after another, and so does the
// upstream connection beside it: a POST with an SSE reply, one with a JSON
// reply, a DELETE answered 204 (no body may follow it, not even an empty
// chunked one, or the client reads it as an unsolicited response and drops
// the connection) and another POST all go over one of each.
func TestMCPChannelKeepsConnections(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.Header.Get("Accept") == "text/event-stream": // X-* headers do not pass
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: two\n\n")
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-keep"))
	client := sb.keepAlive()
	for i, c := range []struct{ method, accept, want string }{
		{http.MethodPost, "text/event-stream", "data: one\n\ndata: two\n\n"},
		{http.MethodPost, "application/json", `{"ok":true}`},
		{http.MethodDelete, "", ""},
		{http.MethodPost, "application/json", `{"ok":true}`},
		{http.MethodPost, "text/event-stream", "data: one\n\ndata: two\n\n"},
	} {
		req, _ := http.NewRequest(c.method, url, strings.NewReader(""))
		req.Header.Set("Accept", c.accept)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if body := bodyOf(t, resp); body != c.want {
			t.Errorf("request %d (%s): %d %q, want %q", i, c.method, resp.StatusCode, body, c.want)
		}
	}
	if n := sb.dials.Load(); n != 1 {
		t.Errorf("the sandbox made %d connections, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(remotes) != 1 {
		t.Errorf("egressd made %d upstream connections, want 1: %v", len(remotes), remotes)
	}
}

// An upstream connection kept for the next request is dialed afresh if the
// server closed it, or sent bytes on it, while it sat unused: the next
// request must neither fail nor read what the server sent unasked.
func TestMCPChannelRedialsAnUpstreamThatChanged(t *testing.T) {
	for _, c := range []struct{ name, after string }{
		{"closed", ""},
		{"sent unasked", "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{}, 2)
			up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
				conn, buf, _ := http.NewResponseController(w).Hijack()
				buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + c.after)
				buf.Flush()
				if c.after == "" {
					conn.Close()
				}
				done <- struct{}{}
			})
			h := startEgressd(t, Options{})
			url := "http://" + up.hostPort() + "/mcp"
			sb := h.openMCP(url, nil)
			client := sb.keepAlive()
			for i := range 2 {
				resp, err := client.Post(url, "application/json", strings.NewReader("{}"))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if body := bodyOf(t, resp); resp.StatusCode != http.StatusOK || body != "hello" {
					t.Errorf("request %d: %d %q", i, resp.StatusCode, body)
				}
				if i == 0 {
					<-done // the server is done with the connection before the next request
				}
			}
			if n := sb.dials.Load(); n != 1 {
				t.Errorf("the sandbox made %d connections, want 1", n)
			}
		})
	}
}

// An exchange ends when the sandbox closes its end, or writes on it again
// before the response is whole (no client of egressd's pipelines): an
// upstream that sends nothing more must not hold the connection.
func TestMCPChannelEndsAnExchangeTheSandboxLeft(t *testing.T) {
	for _, leave := range []string{"close", "write"} {
		t.Run(leave, func(t *testing.T) {
			_, conn, gone := openSilentStream(t)
			if leave == "close" {
				conn.(*net.UnixConn).CloseWrite()
			} else {
				fmt.Fprintf(conn, "DELETE /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
			}
			select {
			case <-gone:
			case <-time.After(poll.Patience):
				t.Fatal("the upstream request outlived the sandbox's exchange")
			}
			_ = conn.SetReadDeadline(time.Now().Add(poll.Patience))
			if rest, err := io.ReadAll(conn); err != nil || strings.Contains(string(rest), "HTTP/1.1") {
				t.Errorf("after the exchange ended: %q %v; want the connection closed", rest, err)
			}
		})
	}
}

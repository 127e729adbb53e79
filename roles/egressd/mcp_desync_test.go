package egressd

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/config"
)

// Request smuggling and response desync on the kept connections: between
// a compromised sandbox and egressd, each request is parsed on its own and
// held to the grant, and a request whose framing is ambiguous ends the
// connection; between egressd and a hostile server, bytes that no request
// asked for are never read as the next response.

// rawUpstream is a server that answers by script, byte for byte: answer
// gets the connection's number (from 0) and the request's on it, and
// returns what to write. It reads each request whole first.
type rawUpstream struct {
	ln    net.Listener
	conns atomic.Int32
}

func newRawUpstream(t *testing.T, answer func(conn, req int) string) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(u.conns.Add(1)) - 1
			wg.Go(func() { u.serve(c, n, answer) })
		}
	})
	return u
}

func (u *rawUpstream) serve(c net.Conn, n int, answer func(conn, req int) string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(poll.Patience))
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		out, closing := strings.CutSuffix(answer(n, i), closeAfter)
		if _, err := io.WriteString(c, out); err != nil || closing {
			return
		}
	}
}

// closeAfter, at the end of an answer, has the server close the
// connection once it wrote the rest.
const closeAfter = "\x00close"

func (u *rawUpstream) url() string { return "http://" + u.ln.Addr().String() + "/mcp" }

// A response followed by bytes it does not frame leaves the upstream
// connection unfit for the next request: egressd dials afresh, and the
// sandbox never reads what the server sent unasked as an answer.
func TestMCPChannelDropsAnUpstreamNotCleanlyFramed(t *testing.T) {
	const smuggled = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled"
	for _, c := range []struct{ name, first, want string }{
		{"a body longer than its Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + smuggled, "hello"},
		{"a 204 with a body", "HTTP/1.1 204 No Content\r\nContent-Length: 8\r\n\r\nsmuggled", ""},
		{"both a length and chunks", "HTTP/1.1 200 OK\r\nContent-Length: 20\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled, "hello"},
		{"two responses to one request", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + smuggled + smuggled, "hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newRawUpstream(t, func(conn, req int) string {
				if conn == 0 && req == 0 {
					return c.first
				}
				return "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond"
			})
			h := startEgressd(t, Options{})
			sb := h.openMCP(up.url(), ptr("Bearer tok-desync"))
			client := sb.keepAlive()
			for i, want := range []string{c.want, "second"} {
				resp, err := client.Post(up.url(), "application/json", strings.NewReader("{}"))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if body := bodyOf(t, resp); body != want {
					t.Errorf("request %d: %d %q, want %q", i, resp.StatusCode, body, want)
				}
			}
			if n := up.conns.Load(); n != 2 {
				t.Errorf("egressd made %d upstream connections, want 2 (the first dropped)", n)
			}
		})
	}
}

// A body shorter than its framing says, the server then closing, reaches
// the sandbox as a body that breaks off, never as one that ended: egressd
// writes no last chunk for it.
func TestMCPChannelShortUpstreamBodyBreaksOff(t *testing.T) {
	for _, c := range []struct{ name, answer string }{
		{"Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newRawUpstream(t, func(int, int) string { return c.answer + closeAfter })
			h := startEgressd(t, Options{})
			sb := h.openMCP(up.url(), nil)
			resp, err := sb.keepAlive().Post(up.url(), "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if data, err := io.ReadAll(resp.Body); err == nil {
				t.Errorf("the cut body %q ended cleanly", data)
			}
		})
	}
}

// Interim responses pass (as Go's transport passes them) up to a bound: a
// server sending them endlessly is refused, not parsed until the timeout.
func TestMCPChannelBoundsInterimResponses(t *testing.T) {
	for _, c := range []struct {
		n    int
		want int
	}{{mcpMaxInterim, http.StatusOK}, {mcpMaxInterim + 1, http.StatusBadGateway}} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			up := newRawUpstream(t, func(int, int) string {
				return strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", c.n) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
			})
			lim := testLimits
			lim.Timeout = config.Dur(poll.Patience)
			h := startEgressd(t, Options{Limits: lim})
			sb := h.openMCP(up.url(), nil)
			if resp, body := sb.do(http.MethodPost, up.url(), nil, "{}"); resp.StatusCode != c.want {
				t.Errorf("%d interim responses: %d %q, want %d", c.n, resp.StatusCode, body, c.want)
			}
		})
	}
}

// What the sandbox writes on a kept connection is parsed one request at a
// time, each held to the grant on its own: framing Go's parser rejects is
// a 400 that ends the connection, a chunked request (which may have had a
// Content-Length beside it) ends it after its answer, and a request
// pipelined behind another is never passed unchecked.
func TestMCPChannelRequestFraming(t *testing.T) {
	next := "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	for _, c := range []struct {
		name, first string
		status      int
	}{
		{"a length and chunks", "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 200},
		{"chunks only", "POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 200},
		{"two lengths", "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}", 400},
		{"a list as a length", "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}", 400},
		{"a coding besides chunked", "POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400},
		{"a signed length", "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, false, hello)
			conn := rawMCPConn(t, up)
			br := bufio.NewReader(conn)
			io.WriteString(conn, c.first)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("%d %q, want %d", resp.StatusCode, body, c.status)
			}
			io.WriteString(conn, next) // egressd must not read it
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				t.Errorf("after the answer: %q; want the connection closed", rest)
			}
			want := int32(0)
			if c.status == http.StatusOK {
				want = 1
			}
			if up.hits.Load() != want {
				t.Errorf("the server got %d requests, want %d", up.hits.Load(), want)
			}
		})
	}
}

// Every request on a kept connection is held to the grant on its own: a
// second one with a header streamable HTTP does not send reaches the
// server without it, a third for another path is refused.
func TestMCPChannelChecksEachRequestOfAConnection(t *testing.T) {
	got := make(chan http.Header, 4)
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, "{}")
	})
	conn := rawMCPConn(t, up)
	br := bufio.NewReader(conn)
	for i, c := range []struct {
		req    string
		status int
	}{
		{"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 200},
		{"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Original-Url: /admin\r\nContent-Length: 2\r\n\r\n{}", 200},
		{"POST /admin HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 403},
	} {
		io.WriteString(conn, c.req)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != c.status {
			t.Errorf("request %d: %d, want %d", i, resp.StatusCode, c.status)
		}
	}
	if n := up.hits.Load(); n != 2 {
		t.Fatalf("the server got %d requests, want 2", n)
	}
	for range 2 {
		if h := <-got; h.Get("X-Original-Url") != "" {
			t.Errorf("the server got X-Original-Url %q", h.Get("X-Original-Url"))
		}
	}
}

// Requests pipelined in one write (no client of egressd's pipelines) end
// the connection with a 400 that says so, and none reaches the server as
// it was written.
func TestMCPChannelRefusesPipelinedRequests(t *testing.T) {
	got := make(chan *http.Request, 4)
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		got <- r
		io.WriteString(w, "{}")
	})
	conn := rawMCPConn(t, up)
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"+
		"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Original-Url: /admin\r\nContent-Length: 2\r\n\r\n{}"+
		"POST /admin HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	all, _ := io.ReadAll(conn) // egressd answers, then ends the connection
	if !strings.HasPrefix(string(all), "HTTP/1.1 400") || !strings.Contains(string(all), "no pipelining") || strings.Count(string(all), "HTTP/1.1") != 1 {
		t.Errorf("pipelined requests: %q", all)
	}
	for range up.hits.Load() {
		if r := <-got; r.URL.Path != "/mcp" || r.Header.Get("X-Original-Url") != "" {
			t.Errorf("the server got %s %s with %v", r.Method, r.URL, r.Header)
		}
	}
}

// A server that frames its answer so badly that egressd's error quotes it
// (a garbled status line, a header line without a colon) gets no echoed
// token into the sandbox's answer or the log through that quote.
func TestMCPChannelGarbledResponseQuotesNoSecret(t *testing.T) {
	const token = "tok-garbled-51c0"
	for _, garble := range []string{
		"HTTP/1.1 2OO Bearer " + token + "\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBearer " + token + "\r\n\r\n",
		"Bearer " + token + "\r\n\r\n",
	} {
		up := newRawUpstream(t, func(int, int) string { return garble })
		h := startEgressd(t, Options{})
		sb := h.openMCP(up.url(), ptr("Bearer "+token))
		resp, body := sb.do(http.MethodPost, up.url(), nil, "{}")
		if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, token) || strings.Contains(h.logs.String(), token) {
			t.Errorf("%q: %d %q; log %s", garble, resp.StatusCode, body, h.logs)
		}
	}
}

package egressd

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/roles/internal/config"
)

// The security review of the remote MCP path (docs/decisions.md,
// 2026-12-02, "remote MCP: what egressd passes either way"): what a
// compromised sandbox or a hostile server puts in headers, a protocol
// switch, and a redirect that spells the secret.

// A compromised sandbox's headers that servers and their front ends read
// as another path, method, host or client (X-Original-URL and its kin)
// never reach the server: egressd serves one path, and these would ask for
// others with the owner's token. Streamable HTTP's own headers do.
func TestMCPChannelForwardsOnlyStreamableHTTPHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, "{}")
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-headers"))
	kept := http.Header{
		"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
		"Mcp-Session-Id": {"s1"}, "Mcp-Protocol-Version": {"2025-06-18"}, "Last-Event-Id": {"e7"},
		"Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}, "Mcp-Param-Region": {"eu"},
	}
	smuggled := http.Header{
		"X-Original-Url": {"/admin"}, "X-Rewrite-Url": {"/admin"}, "X-Http-Method-Override": {"DELETE"},
		"X-Forwarded-Host": {"admin.internal"}, "X-Forwarded-For": {"10.0.0.1"}, "Forwarded": {"for=10.0.0.1"},
		"X-Forwarded-Prefix": {"/admin"}, "X-Api-Key": {"chosen-by-the-sandbox"},
	}
	header := kept.Clone()
	for k, v := range smuggled {
		header[k] = v
	}
	if resp, _ := sb.do(http.MethodPost, url, header, "{}"); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	seen := <-got
	for name := range smuggled {
		if v := seen.Values(name); len(v) > 0 {
			t.Errorf("the server got %s: %q", name, v)
		}
	}
	for name, v := range kept {
		if seen.Get(name) != v[0] {
			t.Errorf("the server got %s %q, want %q", name, seen.Get(name), v[0])
		}
	}
	if seen.Get("Authorization") != "Bearer tok-headers" {
		t.Errorf("the server got Authorization %q", seen.Get("Authorization"))
	}
}

// Only what streamable HTTP's client reads comes back: a cookie the server
// issues (often a credential it trades for the bearer token), a header
// whose very name spells the token, and anything else are dropped.
func TestMCPChannelPassesOnlyStreamableHTTPHeadersBack(t *testing.T) {
	const token = "tok-back-4d1e"
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s-42")
		w.Header().Set("Set-Cookie", "session=worth-a-token; HttpOnly")
		w.Header().Set("X-Seen-"+token, "1")
		w.Header().Set("Authentication-Info", "nextnonce=abc")
		io.WriteString(w, "{}")
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer "+token))
	resp, _ := sb.do(http.MethodPost, url, nil, "{}")
	if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Mcp-Session-Id") != "s-42" {
		t.Errorf("streamable HTTP's headers did not come back: %v", resp.Header)
	}
	for name := range resp.Header {
		if strings.Contains(strings.ToLower(name), token) {
			t.Errorf("a header named for the token came back: %s", name)
		}
	}
	for _, name := range []string{"Set-Cookie", "Authentication-Info"} {
		if v := resp.Header.Values(name); len(v) > 0 {
			t.Errorf("the sandbox got %s: %q", name, v)
		}
	}
}

// A 101 (a protocol switch the request never asked for) would make the
// upstream connection itself the body; it is refused, saying why.
func TestMCPChannelRefusesAProtocolSwitch(t *testing.T) {
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, _ := http.NewResponseController(w).Hijack()
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: raw\r\n\r\nraw bytes of another protocol")
		buf.Flush()
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	resp, body := sb.do(http.MethodPost, url, nil, "{}")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "101") || strings.Contains(body, "raw bytes") {
		t.Errorf("a 101: %d %q", resp.StatusCode, body)
	}
}

// The refusal of a redirect names its host cut short; the cut must not
// leave the start of a secret the host spells, which redacting after the
// cut would no longer recognise.
func TestMCPChannelRedirectNamesNoPartOfTheSecret(t *testing.T) {
	const token = "tokredirect9c4e7a1f"
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		host := strings.Repeat("a", 54) + "." + token + ".example"
		http.Redirect(w, r, "https://"+host+"/", http.StatusFound)
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer "+token))
	resp, body := sb.do(http.MethodPost, url, nil, "{}")
	wantRefused(t, resp, "a redirect")
	if strings.Contains(body, token[:6]) || strings.Contains(h.logs.String(), token[:6]) {
		t.Errorf("the start of the secret came back: %q; log %s", body, h.logs)
	}
}

// A compromised sandbox decides how many connections it makes: a flood of
// garbled requests (each one a 400 and a log line) must not become a flood
// of lines in up's log.
func TestMCPChannelLogIsRateLimited(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	sb := h.openMCP("http://"+up.hostPort()+"/mcp", nil)
	const flood = 300
	start := time.Now()
	for range flood {
		conn, err := sb.dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "garbage\r\n\r\n")
		io.ReadAll(conn) // egressd logs before it closes the connection
		conn.Close()
	}
	lines := strings.Count(h.logs.String(), "mcp - http://")
	bound := mcpLogBurst + int(time.Since(start)/mcpLogInterval) + 1
	if lines == 0 || lines > bound {
		t.Errorf("%d garbled requests made %d log lines, want 1 to %d", flood, lines, bound)
	}
}

// A body encoded behind a first Content-Encoding of identity is still an
// encoded body: the secret could pass inside it unseen.
func TestMCPChannelRefusesAnEncodingBehindIdentity(t *testing.T) {
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Content-Encoding", "identity")
		w.Header().Add("Content-Encoding", "gzip")
		io.WriteString(w, "\x1f\x8b compressed")
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-enc"))
	resp, body := sb.do(http.MethodPost, url, nil, "{}")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "encoded body") {
		t.Errorf("identity then gzip: %d %q", resp.StatusCode, body)
	}
}

// After a burst the limiter passes a line per interval, and that line says
// how many it dropped, so that the owner knows the log is incomplete.
func TestLineLimiterSaysWhatItDropped(t *testing.T) {
	var out strings.Builder
	l := newLineLimiter(log.New(&out, "", 0))
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	for range mcpLogBurst + 5 {
		l.print("line")
	}
	if n := strings.Count(out.String(), "\n"); n != mcpLogBurst {
		t.Fatalf("a burst of %d made %d lines", mcpLogBurst+5, n)
	}
	now = now.Add(mcpLogInterval)
	l.print("later")
	if !strings.HasSuffix(out.String(), "later (and 5 lines of this channel dropped before it: too many)\n") {
		t.Errorf("after the interval: %q", out.String()[len(out.String())-80:])
	}
}

// A server whose JSON encoder escapes '/' (PHP's json_encode does, by
// default) echoes a token with a slash as "\/": that is the token still,
// and the sandbox would read it once it decodes the JSON.
func TestMCPChannelRedactsATokenEchoedAsJSON(t *testing.T) {
	const token = "tok/json/7Qx+e="
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		escaped := strings.ReplaceAll(r.Header.Get("Authorization"), "/", `\/`)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"bad credential `+escaped+`"}}`)
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer "+token))
	_, body := sb.do(http.MethodPost, url, nil, "{}")
	if strings.Contains(body, `tok\/json`) || !strings.Contains(body, "bad credential [redacted]") {
		t.Errorf("the sandbox read %q", body)
	}
}

// A line quotes the sandbox's method or request line, which only the
// request head's 64 KiB bounds: it is cut at 4 KiB.
func TestMCPChannelLogLinesAreCut(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	sb := h.openMCP("http://"+up.hostPort()+"/mcp", nil)
	for _, head := range []string{
		strings.Repeat("M", 40<<10) + " /mcp HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("y", 40<<10) + "\r\n\r\n",
	} {
		conn, err := sb.dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, head)
		io.ReadAll(conn)
		conn.Close()
	}
	for line := range strings.Lines(h.logs.String()) {
		if len(line) > mcpLogLine+64 {
			t.Errorf("a log line of %d bytes: %.80q...", len(line), line)
		}
	}
}

// A server that takes the connection and never finishes the TLS handshake
// fails the request with egressd's timeout, as one slow to answer does:
// [egress] timeout bounds the handshake too.
func TestMCPChannelStalledHandshakeTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held, never answered
		}
	}()
	lim := testLimits
	lim.Timeout = config.Dur(300 * time.Millisecond)
	h := startEgressd(t, Options{Limits: lim})
	url := "https://" + ln.Addr().String() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-stall"))
	resp, body := sb.do(http.MethodPost, url, nil, "{}")
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get(errorHeader) != "timeout" {
		t.Errorf("a stalled handshake: %d %q", resp.StatusCode, body)
	}
}

// What a compromised sandbox may send instead of a socketpair's end (a
// file, a listening socket, both ends of one pair) is closed or fails
// alone, and the channel goes on serving.
func TestMCPChannelSurvivesOtherDescriptors(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	send := func(fds ...int) {
		t.Helper()
		if _, _, err := sb.ch.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	send(int(f.Fd()))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "l.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lf, _ := ln.File()
	defer lf.Close()
	send(int(lf.Fd()))
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	send(pair[0], pair[1]) // two at once: the second is closed
	send(pair[1])
	syscall.Close(pair[0])
	syscall.Close(pair[1])
	if resp, body := sb.do(http.MethodPost, url, nil, ""); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Errorf("after the other descriptors: %d %q", resp.StatusCode, body)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
}

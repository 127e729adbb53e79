package egressd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/wire"
)

// The server gets egressd's bearer token and nothing of the sandbox's own
// credentials; TLS is egressd's, with the url's host (an IP literal the
// owner wrote, so loopback is allowed).
func TestMCPChannelAddsTheTokenAndStripsTheSandboxes(t *testing.T) {
	got := make(chan http.Header, 1)
	up := newUpstream(t, true, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, `{"ok":true}`)
	})
	h := startEgressd(t, Options{})
	url := "https://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-mcp-1"))
	header := http.Header{"Authorization": {"Bearer chosen-by-the-sandbox"}, "Cookie": {"a=b"}, "Proxy-Authorization": {"x"}, "Mcp-Session-Id": {"s1"}}
	resp, body := sb.do(http.MethodPost, url, header, `{"jsonrpc":"2.0"}`)
	if resp.StatusCode != http.StatusOK || body != `{"ok":true}` {
		t.Fatalf("POST: %d %q", resp.StatusCode, body)
	}
	h2 := <-got
	if h2.Get("Authorization") != "Bearer tok-mcp-1" || h2.Get("Cookie") != "" || h2.Get("Proxy-Authorization") != "" || h2.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("the server got %v", h2)
	}
}

// Only the url's path, and only streamable HTTP's methods.
func TestMCPChannelServesOnlyTheURL(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	for _, c := range []struct{ method, url string }{
		{http.MethodPost, "http://" + up.hostPort() + "/admin"},
		{http.MethodPost, url + "?x=1"},
		{http.MethodPut, url},
		{http.MethodPost, "http://" + up.hostPort() + "/mcp/../admin"},
	} {
		resp, _ := sb.do(c.method, c.url, nil, "")
		if resp.StatusCode < 400 || resp.Header.Get(errorHeader) == "" {
			t.Errorf("%s %s: %d, want a refusal", c.method, c.url, resp.StatusCode)
		}
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
	// A request in absolute form for another host names another path.
	conn, _ := sb.dial(context.Background(), "", "")
	defer conn.Close()
	fmt.Fprintf(conn, "GET http://203.0.113.9/mcp HTTP/1.1\r\nHost: 203.0.113.9\r\n\r\n")
	back, _ := io.ReadAll(conn)
	if !strings.Contains(string(back), " 403 ") || up.hits.Load() != 0 || len(h.dialedAddrs()) != 0 {
		t.Errorf("absolute form to another host: %q, dialed %v", back, h.dialedAddrs())
	}
}

// A url that config.toml would refuse is refused here too: egressd does
// not trust brokerd's checks alone.
func TestMCPOpenRefusesWhatConfigRefuses(t *testing.T) {
	h := startEgressd(t, Options{})
	for _, url := range []string{"http://localhost:8080/mcp", "http://example.com/mcp", "https://u:p@example.com/mcp", "https://example.com/mcp?k=1"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := fdpass.OpenMCPEgress(ctx, h.path, wire.McpURL(url), nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "url") {
			t.Errorf("%s: %v, want a refusal", url, err)
		}
	}
}

// A redirect is never followed, to another host or to another path of
// the same one: the sandbox gets a refusal that says why.
func TestMCPChannelFollowsNoRedirect(t *testing.T) {
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			http.Redirect(w, r, r.Header.Get("X-To"), http.StatusTemporaryRedirect)
		default:
			io.WriteString(w, "reached "+r.URL.Path)
		}
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-redirect"))
	for _, to := range []string{"http://203.0.113.7/steal", "http://" + up.hostPort() + "/admin"} {
		before := up.hits.Load()
		resp, body := sb.do(http.MethodPost, url, http.Header{"X-To": {to}}, "{}")
		wantRefused(t, resp, "redirect to "+to)
		if !strings.Contains(body, "egressd follows no redirect") || strings.Contains(body, "reached") {
			t.Errorf("redirect to %s: %q", to, body)
		}
		if up.hits.Load() != before+1 {
			t.Errorf("redirect to %s: the server got %d requests, want 1", to, up.hits.Load()-before)
		}
	}
	for _, ap := range h.dialedAddrs() {
		if ap.Addr().String() != "127.0.0.1" {
			t.Errorf("egressd dialed %s", ap)
		}
	}
}

// The token an upstream echoes, whole or split across writes, in the body
// or a header, never reaches the sandbox or the log.
func TestMCPChannelRedactsAnEchoedToken(t *testing.T) {
	const token = "tok-echo-8c2f61"
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Echo", auth)
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		io.WriteString(w, "data: you sent "+auth[:12])
		f.Flush()
		time.Sleep(20 * time.Millisecond) // two reads on egressd's side, most likely
		io.WriteString(w, auth[12:]+"\n\ndata: and "+token[:5])
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer "+token))
	resp, body := sb.do(http.MethodPost, url, nil, "{}")
	if strings.Contains(body, token) || strings.Contains(body, token[:8]) || !strings.Contains(body, "you sent [redacted]") {
		t.Errorf("the sandbox read %q", body)
	}
	if v := resp.Header.Get("X-Echo"); strings.Contains(v, token) {
		t.Errorf("the sandbox read the header %q", v)
	}
	if strings.Contains(h.logs.String(), token) {
		t.Errorf("the log holds the token: %s", h.logs)
	}
}

// An SSE reply goes to the sandbox event by event, as it comes: the
// server sends its second event only after the sandbox read the first.
func TestMCPChannelStreamsEventsAsTheyCome(t *testing.T) {
	first := make(chan struct{})
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-first:
		case <-time.After(poll.Patience):
		}
		io.WriteString(w, "data: two\n\n")
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, ptr("Bearer tok-stream"))
	resp, err := sb.client().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("data: one\n\n"))
	start := time.Now()
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data: one\n\n" {
		t.Fatalf("first event: %q %v", buf, err)
	}
	if time.Since(start) >= poll.Patience {
		t.Errorf("the first event came only with the second")
	}
	close(first)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "data: two\n\n" {
		t.Errorf("second event: %q", rest)
	}
}

// A response over max_bytes is cut there, and the log says so.
func TestMCPChannelCutsAtMaxBytes(t *testing.T) {
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := strings.Repeat("x", 64<<10)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	_, body := sb.do(http.MethodPost, url, nil, "{}")
	if len(body) != testLimits.MaxBytes {
		t.Errorf("the sandbox read %d bytes, want max_bytes %d", len(body), testLimits.MaxBytes)
	}
	poll.Until(t, "the log line of the cut", func() bool { return strings.Contains(h.logs.String(), "passed max_bytes") })
}

// A session id must be visible ASCII: one with an escape sequence (which
// net/http itself refuses, quoted), a C1 control or a bidi override never
// reaches the sandbox's client, and the refusal says why.
func TestMCPChannelRefusesASessionIDWithControlCharacters(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"s\x1b[2J\x07x", "malformed MIME header line"},
		{"s\u0085\u202egnp.exe", "Mcp-Session-Id that is not visible ASCII"},
		{"two words", "Mcp-Session-Id that is not visible ASCII"},
	} {
		up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
			conn, buf, _ := http.NewResponseController(w).Hijack()
			defer conn.Close()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: " + c.id + "\r\nContent-Length: 2\r\n\r\n{}")
			buf.Flush()
		})
		h := startEgressd(t, Options{})
		url := "http://" + up.hostPort() + "/mcp"
		sb := h.openMCP(url, nil)
		resp, body := sb.do(http.MethodPost, url, nil, "{}")
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, c.want) {
			t.Errorf("session id %q: %d %q", c.id, resp.StatusCode, body)
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("the sandbox got the session id %q", id)
		}
		if strings.ContainsAny(h.logs.String()+body, "\x1b\x07\u0085\u202e") {
			t.Errorf("a control character reached the log or the sandbox: %q %q", h.logs, body)
		}
	}
}

// When the channel ends (the instance ended), every stream egressd serves
// on it ends too, and so does its upstream request.
func TestMCPChannelEndsItsStreams(t *testing.T) {
	sb, conn, gone := openSilentStream(t)
	sb.ch.Close()
	_ = conn.SetReadDeadline(time.Now().Add(poll.Patience))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Errorf("the stream did not end with the channel: %v", err)
	}
	select {
	case <-gone:
	case <-time.After(poll.Patience):
		t.Error("the upstream request outlived the channel")
	}
}

// A channel has at most maxMCPConns connections open; one more is closed
// at once, and the channel goes on serving.
func TestMCPChannelBoundsItsConnections(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.(http.Flusher).Flush()
			<-release
		}
	})
	defer close(release)
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	var open []net.Conn
	for range maxMCPConns {
		c, _ := sb.dial(context.Background(), "", "")
		defer c.Close()
		fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
		head := make([]byte, 12)
		if _, err := io.ReadFull(c, head); err != nil {
			t.Fatalf("connection %d: %v", len(open), err)
		}
		open = append(open, c)
	}
	extra, _ := sb.dial(context.Background(), "", "")
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(poll.Patience))
	if n, err := extra.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("connection %d: read %d, %v; want it closed", maxMCPConns+1, n, err)
	}
	open[0].Close()
	poll.Until(t, "a free connection slot", func() bool {
		c, _ := sb.dial(context.Background(), "", "")
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		return strings.HasPrefix(string(b), "HTTP/1.1 200")
	})
}

// The redactor holds back a tail that may begin the secret, whatever the
// split, and lets everything else through as it comes.
func TestStreamRedactorAcrossSplits(t *testing.T) {
	const token = "tok-split-42"
	text := "a " + token + " b Bearer " + token + " c tok-"
	for cut := range len(text) {
		var out strings.Builder
		r := newStreamRedactor(newSecret(ptr("Bearer "+token)), &out)
		r.write([]byte(text[:cut]))
		r.write([]byte(text[cut:]))
		r.close(false)
		if strings.Contains(out.String(), token) || out.String() != "a [redacted] b [redacted] c tok-" {
			t.Errorf("split at %d: %q", cut, out.String())
		}
	}
	var out strings.Builder
	r := newStreamRedactor(newSecret(ptr("Bearer "+token)), &out)
	r.write([]byte("end\ntok-spl"))
	r.close(true)
	if out.String() != "end\n" {
		t.Errorf("a cut body kept the start of the secret: %q", out.String())
	}
}

// What the sandbox sends on the channel that is not a stream socket (a
// byte alone, a datagram socket) is dropped, and the channel goes on.
func TestMCPChannelDropsWhatIsNotAConnection(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	if _, err := sb.ch.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	if _, _, err := sb.ch.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds[1]), nil); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[1])
	syscall.Write(fds[0], []byte("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"))
	if resp, body := sb.do(http.MethodPost, url, nil, ""); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Errorf("after the bad descriptors: %d %q", resp.StatusCode, body)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
}

// A server slower than [egress] timeout to send its response head fails
// the request with egressd's timeout, and its connection is closed.
func TestMCPChannelSlowServerTimesOut(t *testing.T) {
	closed := make(chan struct{})
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server sees its connection close
		select {
		case <-r.Context().Done():
			close(closed)
		case <-time.After(poll.Patience):
		}
	})
	lim := testLimits
	lim.Timeout = config.Dur(300 * time.Millisecond)
	h := startEgressd(t, Options{Limits: lim, MCPCallTime: time.Millisecond})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	resp, body := sb.do(http.MethodPost, url, nil, "{}")
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get(errorHeader) != "timeout" {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	select {
	case <-closed:
	case <-time.After(poll.Patience):
		t.Error("egressd kept the connection of the request that timed out")
	}
}

// A name is resolved once per connection and every address checked, as
// for http_fetch: one that resolves to loopback is refused (only a literal
// the owner wrote may be special), a public one is what is dialed.
func TestMCPChannelChecksEveryAddress(t *testing.T) {
	h := startEgressd(t, Options{})
	h.resolver.set("mcp.example.com", "127.0.0.1")
	h.resolver.set("public.example.com", "93.184.216.34")
	sb := h.openMCP("https://mcp.example.com/mcp", ptr("Bearer tok-ssrf"))
	resp, body := sb.do(http.MethodPost, "https://mcp.example.com/mcp", nil, "{}")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "resolves to a loopback address") {
		t.Errorf("a name resolving to loopback: %d %q", resp.StatusCode, body)
	}
	if got := h.dialedAddrs(); len(got) != 0 {
		t.Errorf("egressd dialed %v", got)
	}
	sb = h.openMCP("https://public.example.com:8443/mcp", nil)
	sb.do(http.MethodPost, "https://public.example.com:8443/mcp", nil, "{}")
	if got := h.dialedAddrs(); len(got) != 1 || got[0].String() != "93.184.216.34:8443" {
		t.Errorf("egressd dialed %v, want the checked address", got)
	}
}

// The url's origin is the one hosts entry: an IP literal, IPv6 too, with
// its port.
func TestMCPGrantOfAnIPv6Literal(t *testing.T) {
	g, err := mcpGrantOf(wire.EgressMcpOpen{URL: "http://[::1]:8931/a/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if g.target.Authority() != "[::1]:8931" || g.path != "/a/mcp" || g.target.Scheme != "http" {
		t.Errorf("%+v", g)
	}
}

// A message over 2 MiB is refused before it goes anywhere; a GET with a
// body too.
func TestMCPChannelBoundsRequests(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	if resp, _ := sb.do(http.MethodPost, url, nil, strings.Repeat("x", mcpMaxRequestBody+1)); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a big POST: %d", resp.StatusCode)
	}
	if resp, _ := sb.do(http.MethodGet, url, nil, "body"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a GET with a body: %d", resp.StatusCode)
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}

// A url with no path (https://host) is the path "/", which is what an
// HTTP client asks for: the channel serves it, and no other path.
func TestMCPChannelServesAURLWithNoPath(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	for _, url := range []string{"http://" + up.hostPort(), "http://" + up.hostPort() + "/"} {
		sb := h.openMCP(url, nil)
		if resp, body := sb.do(http.MethodPost, url, nil, "{}"); resp.StatusCode != http.StatusOK || body != "hello" {
			t.Errorf("POST %s: %d %q", url, resp.StatusCode, body)
		}
		if resp, _ := sb.do(http.MethodPost, "http://"+up.hostPort()+"/admin", nil, "{}"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST /admin on %s: %d, want 403", url, resp.StatusCode)
		}
	}
}

// A notification's 202 with an empty body comes back with its head in one
// write, Content-Length 0 and not chunked, so that a client that closes on
// the head breaks nothing, and egressd's log line for it says no problem.
func TestMCPChannelEmptyAnswerIsOneWrite(t *testing.T) {
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
	})
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	resp, _ := sb.do(http.MethodPost, url, nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted || resp.ContentLength != 0 || len(resp.TransferEncoding) > 0 {
		t.Errorf("%d, length %d, %v: want 202 with Content-Length 0", resp.StatusCode, resp.ContentLength, resp.TransferEncoding)
	}
	want := "mcp POST http://" + up.hostPort() + " -> 202, 0 bytes\n"
	poll.Until(t, "egressd's log line "+want, func() bool { return strings.Contains(h.logs.String(), want) })
}

// Remote MCP channels have slots of their own, as many as [mcp]
// max_instances: more are refused naming that key, and however many are
// open, http_fetch still gets its calls.
func TestMCPChannelsHaveSlotsOfTheirOwn(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{MCPChannels: maxCalls})
	url := "http://" + up.hostPort() + "/mcp"
	for range maxCalls {
		h.openMCP(url, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := fdpass.OpenMCPEgress(ctx, h.path, wire.McpURL(url), nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("all %d remote MCP channels are open ([mcp] max_instances)", maxCalls)) {
		t.Errorf("one channel too many: %v", err)
	}
	if resp, body := h.get([]string{"http://" + up.hostPort()}, up.URL+"/page"); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Errorf("http_fetch beside %d channels: %d %q", maxCalls, resp.StatusCode, body)
	}
}

// A call slower than [egress] timeout but within its own limit ([sandbox]
// wall_time, MCPCallTime) is not cut: a JSON reply's head comes with the
// result.
func TestMCPChannelSlowCallWithinItsLimit(t *testing.T) {
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond) // the server's own work, not a wait for the test
		io.WriteString(w, "done")
	})
	lim := testLimits
	lim.Timeout = config.Dur(200 * time.Millisecond)
	h := startEgressd(t, Options{Limits: lim, MCPCallTime: 5 * time.Second})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	if resp, body := sb.do(http.MethodPost, url, nil, "{}"); resp.StatusCode != http.StatusOK || body != "done" {
		t.Errorf("%d %q, want the slow result", resp.StatusCode, body)
	}
}

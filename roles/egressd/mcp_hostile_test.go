package egressd

import (
	"io"
	"net/http"
	"strings"
	"testing"
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

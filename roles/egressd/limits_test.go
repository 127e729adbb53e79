package egressd

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/config"
)

func TestBodyOverTheCapIsCutAndFlagged(t *testing.T) {
	h := startEgressd(t, Options{Limits: config.Egress{MaxBytes: 1000, Timeout: testLimits.Timeout, MaxRedirects: 3}})
	up := newUpstream(t, true, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(truncatedHeader, "false")
		w.Write([]byte(strings.Repeat("x", 5000)))
	})
	resp, body := h.get([]string{up.hostPort()}, up.URL)
	if resp.StatusCode != http.StatusOK || len(body) != 1000 || resp.Header.Values(truncatedHeader)[0] != "true" || len(resp.Header.Values(truncatedHeader)) != 1 {
		t.Fatalf("got %d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
	if !strings.Contains(h.logs.String(), "-> 200, 1000 bytes, truncated") {
		t.Errorf("log %q", h.logs)
	}
}

func TestSlowServerTimesOut(t *testing.T) {
	limit := 300 * time.Millisecond
	h := startEgressd(t, Options{Limits: config.Egress{MaxBytes: 1000, Timeout: config.Dur(limit), MaxRedirects: 3}})
	up := newUpstream(t, true, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	start := time.Now()
	resp, body := h.get([]string{up.hostPort()}, up.URL)
	took := time.Since(start)
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get(errorHeader) != "timeout" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if took > limit+writeGrace {
		t.Errorf("the answer took %v with a limit of %v", took, limit)
	}
}

// TestSecretReachesOnlyTheUpstream: egressd adds the call's Authorization
// and strips the sandbox's own credentials; the secret never comes back to
// the sandbox, even when the upstream echoes it, and never reaches the log.
func TestSecretReachesOnlyTheUpstream(t *testing.T) {
	const token = "s3cret-token-0123456789"
	auth := "Bearer " + token
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != auth {
			t.Errorf("upstream got Authorization %q", got)
		}
		for _, name := range []string{"Cookie", "Proxy-Authorization", "Proxy-Foo", "X-Dropped"} {
			if v := r.Header.Get(name); v != "" {
				t.Errorf("upstream got %s: %q", name, v)
			}
		}
		if r.Method != http.MethodPost || r.Header.Get("X-Kept") != "yes" {
			t.Errorf("upstream got %s with X-Kept %q", r.Method, r.Header.Get("X-Kept"))
		}
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.Write([]byte("you sent " + r.Header.Get("Authorization") + " and key " + token))
	})
	header := http.Header{
		"Authorization":       {"Bearer from-the-sandbox"},
		"Cookie":              {"session=1"},
		"Proxy-Authorization": {"Basic eA=="},
		"Proxy-Foo":           {"1"},
		"Connection":          {"X-Dropped"},
		"X-Dropped":           {"1"},
		"X-Kept":              {"yes"},
	}
	resp, back := h.exchange([]string{up.hostPort()}, &auth, proxyRequest(t, http.MethodPost, up.URL+"/v1/chat", header, `{"prompt":"hi"}`))
	if resp.StatusCode != http.StatusOK || up.hits.Load() != 1 {
		t.Fatalf("got %d, %d hits", resp.StatusCode, up.hits.Load())
	}
	if strings.Contains(string(back), token) || !strings.Contains(string(back), "you sent [redacted] and key [redacted]") {
		t.Errorf("the sandbox read %q", back)
	}
	if strings.Contains(h.logs.String(), token) || !strings.Contains(h.logs.String(), "POST https://"+up.hostPort()+" -> 200") {
		t.Errorf("log %q", h.logs)
	}
}

func TestMethods(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, hello)
	hosts := []string{up.hostPort()}
	auth := "Bearer k"
	cases := []struct {
		allowed, method string // the call's egress_open method, and the request's
		auth            *string
		body            string
		want            int
	}{
		{http.MethodGet, http.MethodGet, nil, "", http.StatusOK},
		{http.MethodGet, http.MethodGet, &auth, "", http.StatusOK},
		{http.MethodPost, http.MethodPost, &auth, "{}", http.StatusOK},
		// A compromised fetch sandbox must not post with the owner's credential.
		{http.MethodGet, http.MethodPost, &auth, "{}", http.StatusMethodNotAllowed},
		{http.MethodPost, http.MethodGet, &auth, "", http.StatusMethodNotAllowed},
		{http.MethodPost, http.MethodPut, &auth, "{}", http.StatusMethodNotAllowed},
		{http.MethodGet, http.MethodDelete, nil, "", http.StatusMethodNotAllowed},
		{http.MethodGet, http.MethodHead, nil, "", http.StatusMethodNotAllowed},
		{http.MethodGet, http.MethodGet, nil, "a body", http.StatusBadRequest},
	}
	for _, c := range cases {
		resp, _ := h.exchangeAs(hosts, c.allowed, c.auth, proxyRequest(t, c.method, up.URL, nil, c.body))
		if resp.StatusCode != c.want {
			t.Errorf("%s on a %s call (secret %v, body %q): %d, want %d", c.method, c.allowed, c.auth != nil, c.body, resp.StatusCode, c.want)
		}
	}
	if n := up.hits.Load(); n != 3 {
		t.Errorf("the upstream saw %d requests, want 3", n)
	}
}

func TestRequestsThatAreNotAbsoluteOrNotHTTP(t *testing.T) {
	h := startEgressd(t, Options{})
	hosts := []string{"*"}
	for name, raw := range map[string]string{
		"origin form":     "GET /x HTTP/1.1\r\nHost: a.example\r\n\r\n",
		"CONNECT":         "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
		"garbage":         "hello\r\n\r\n",
		"header too long": "GET https://a.example/ HTTP/1.1\r\nX: " + strings.Repeat("a", maxHeaderBytes) + "\r\n\r\n",
		"ftp":             "GET ftp://a.example/ HTTP/1.1\r\n\r\n",
	} {
		resp, _ := h.exchange(hosts, nil, raw)
		if resp.StatusCode < 400 || resp.Header.Get(errorHeader) == "" {
			t.Errorf("%s: %d %v", name, resp.StatusCode, resp.Header)
		}
	}
	if n := h.resolver.total(); n != 0 {
		t.Errorf("resolved %d names", n)
	}
}

// A cookie an upstream issues to http_fetch or consult never reaches the
// sandbox, so no tool result can carry it to the model.
func TestSetCookieNeverReachesTheSandbox(t *testing.T) {
	h := startEgressd(t, Options{})
	up := newUpstream(t, true, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "session=worth-the-token; HttpOnly")
		w.Header().Add("Set-Cookie2", "old=1")
		w.Header().Set("X-Kept", "yes")
		w.Write([]byte("page"))
	})
	auth := "Bearer tok-cookie"
	resp, back := h.exchange([]string{up.hostPort()}, &auth, rawGet(up.URL+"/page"))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Kept") != "yes" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if strings.Contains(strings.ToLower(string(back)), "cookie") || strings.Contains(string(back), "worth-the-token") {
		t.Errorf("the sandbox read a cookie: %q", back)
	}
}

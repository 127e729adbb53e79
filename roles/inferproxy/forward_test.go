package inferproxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/llamadouble"
)

// Each request reaches the upstream as a direct request would, and its
// answer reaches the client as the upstream sent it: status, headers and
// body, byte for byte.
func TestForwardsByteForByte(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	big := bytes.Repeat([]byte(`{"role":"user","content":"0123456789abcdef"},`), 10<<20/44)
	chat := `{"messages":[{"role":"user","content":"hi <&>"}],"stream":true}`
	for _, c := range []struct {
		name, method, path string
		body               func() io.Reader
		header             []string
	}{
		{"health", "GET", "/health", nil, nil},
		{"props", "GET", "/props", nil, []string{"Authorization", "Bearer no-key"}},
		{"health with a query", "GET", "/health?fail_on_no_slot=1", nil, nil},
		{"tokenize", "POST", "/tokenize", text(`{"content":"Hello"}`), []string{"Content-Type", "application/json"}},
		{"chat echoed", "POST", "/v1/chat/completions", text(chat), []string{"X-Test-Reply", "echo"}},
		{"chat streamed", "POST", "/v1/chat/completions", text(chat), []string{"X-Test-Reply", "sse", "Accept", "text/event-stream"}},
		{"10 MB each way", "POST", "/v1/chat/completions", func() io.Reader { return bytes.NewReader(big) }, []string{"X-Test-Reply", "echo"}},
		{"chunked request body", "POST", "/v1/chat/completions", func() io.Reader { return io.MultiReader(strings.NewReader(chat)) }, []string{"X-Test-Reply", "echo"}},
		{"upstream error", "POST", "/v1/chat/completions", text(chat), []string{"X-Test-Reply", "error"}},
		{"no date, no content type", "GET", "/props", nil, []string{"X-Test-Reply", "bare"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := func() io.Reader {
				if c.body == nil {
					return nil
				}
				return c.body()
			}
			direct := roundTrip(t, directClient(), newRequest(t, c.method, up.srv.URL+c.path, body(), c.header...))
			proxied := roundTrip(t, h.client, newRequest(t, c.method, proxyURL(c.path), body(), c.header...))
			reqs := up.requests()
			compareSeen(t, reqs[len(reqs)-2], reqs[len(reqs)-1])
			compareExchange(t, direct, proxied)
		})
	}
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

func compareSeen(t *testing.T, direct, proxied seen) {
	t.Helper()
	if !bytes.Equal(direct.body, proxied.body) {
		t.Errorf("the upstream got a body of %d bytes through inferproxy, %d directly", len(proxied.body), len(direct.body))
	}
	direct.body, proxied.body = nil, nil
	if !reflect.DeepEqual(direct, proxied) {
		t.Errorf("the upstream saw\n%+v\nthrough inferproxy, and\n%+v\ndirectly", proxied, direct)
	}
}

func compareExchange(t *testing.T, direct, proxied exchange) {
	t.Helper()
	if !bytes.Equal(direct.body, proxied.body) {
		t.Errorf("the client got a body of %d bytes through inferproxy, %d directly:\n%.300q\n%.300q", len(proxied.body), len(direct.body), proxied.body, direct.body)
	}
	direct.body, proxied.body = nil, nil
	if !reflect.DeepEqual(direct, proxied) {
		t.Errorf("the client got\n%+v\nthrough inferproxy, and\n%+v\ndirectly", proxied, direct)
	}
}

// The first event reaches the client while the upstream still holds the
// second: nothing waits for the rest of the response.
func TestChunksArriveAsSent(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader("{}"), "X-Test-Reply", "hold")
	resp, err := h.client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("no response while the upstream holds the rest: %v", err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); line != "data: first\n" {
		t.Fatalf("read %q, %v, while the upstream holds the rest", line, err)
	}
	close(up.release)
	rest, err := io.ReadAll(r)
	if string(rest) != "\ndata: second\n\n" || err != nil {
		t.Errorf("then %q, %v", rest, err)
	}
}

// A streamed chat with the scripted llama-server adds up on the far side.
func TestStreamsTheDouble(t *testing.T) {
	double := llamadouble.New(llamadouble.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go double.Serve(ctx, ln)
	h := startProxy(t, "http://"+ln.Addr().String(), Options{})
	body := `{"messages":[{"role":"user","content":"fetch https://example.org/"}],"stream":true,"stream_options":{"include_usage":true},` +
		`"tools":[{"type":"function","function":{"name":"http_fetch","description":"Fetch.","parameters":{"type":"object"}}}]}`
	e := roundTrip(t, h.client, newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader(body)))
	if e.status != 200 || !e.chunked || !strings.Contains(string(e.body), `"timings":{"cache_n":0,`) ||
		!strings.HasSuffix(string(e.body), "data: [DONE]\n\n") || !strings.Contains(string(e.body), `"name":"http_fetch"`) {
		t.Errorf("status %d chunked %v body %.400s", e.status, e.chunked, e.body)
	}
	if got := double.Requests()[0].Body; string(got) != body {
		t.Errorf("the double got %s", got)
	}
}

// Only the endpoints loopd uses pass, and only with their methods.
func TestRefusesOtherEndpoints(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	for _, c := range []struct{ method, path string }{
		{"GET", "/metrics"}, {"POST", "/completion"}, {"POST", "/v1/completions"}, {"GET", "/v1/models"},
		{"POST", "/slots/0?action=erase"}, {"POST", "/props"}, {"GET", "/v1/chat/completions"},
		{"HEAD", "/health"}, {"POST", "/health"}, {"DELETE", "/slots"}, {"POST", "/detokenize"},
		{"GET", "/health/"}, {"GET", "/v1/health"}, {"GET", "/"}, {"GET", "//health"},
		{"POST", "/v1/chat/completions/"}, {"OPTIONS", "/tokenize"}, {"POST", "/apply-template"},
		// Newer llama-server builds list each slot's prompt, and inspect's
		// slot holds a handle's content (DESIGN.md section 15).
		{"GET", "/slots"}, {"GET", "/slots?fail_on_no_slot=1"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			e := roundTrip(t, h.client, newRequest(t, c.method, proxyURL(c.path), nil))
			if c.method == "HEAD" {
				if e.status != 403 {
					t.Errorf("status %d", e.status)
				}
				return
			}
			oneLineJSONError(t, e, 403, "permission_error", "is not forwarded; only POST /v1/chat/completions, GET /health")
		})
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream got %d refused requests", n)
	}
	if !strings.Contains(h.logs.String(), `refused GET "/metrics": not an endpoint loopd uses`) {
		t.Errorf("log: %s", h.logs)
	}
}

// An upstream that is down gets a 502 in llama-server's shape, and the
// next request after it comes up works.
func TestUpstreamDownThenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h := startProxy(t, "http://"+addr, Options{})
	e := roundTrip(t, h.client, newRequest(t, "GET", proxyURL("/health"), nil))
	oneLineJSONError(t, e, 502, "unavailable_error", "the upstream llama-server at http://"+addr+" did not answer GET /health")
	if !strings.Contains(h.logs.String(), "did not answer GET /health") {
		t.Errorf("log: %s", h.logs)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		require.Available(t, "the port just freed", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"status":"ok"}`) })}
	go srv.Serve(ln)
	defer srv.Close()
	if e := roundTrip(t, h.client, newRequest(t, "GET", proxyURL("/health"), nil)); e.status != 200 || string(e.body) != `{"status":"ok"}` {
		t.Errorf("after the upstream came up: %d %s", e.status, e.body)
	}
}

// A request held by the upstream blocks no other request.
func TestSlowRequestBlocksNothing(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(up.release)
	wg.Go(func() {
		resp, err := h.client.Do(newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader("{}"), "X-Test-Reply", "hold"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	poll.Until(t, "the held chat to reach the upstream", func() bool { return len(up.requests()) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		if e := roundTrip(t, h.client, newRequest(t, "GET", proxyURL("/health"), nil).WithContext(ctx)); e.status != 200 {
			t.Errorf("health beside a held chat: %d", e.status)
		}
	}
}

// When loopd hangs up mid-reply, the upstream request is cancelled too, so
// llama-server stops generating for nobody.
func TestClientGoneCancelsUpstream(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req := newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader("{}"), "X-Test-Reply", "hold").WithContext(ctx)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	within(t, 5*time.Second, "the upstream seeing the client go", func() { <-up.gone })
}

// An upstream that breaks off mid-stream cuts the client's stream too,
// rather than ending it cleanly as if the reply were whole.
func TestUpstreamBreakCutsTheStream(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	resp, err := h.client.Do(newRequest(t, "POST", proxyURL("/v1/chat/completions"), strings.NewReader("{}"), "X-Test-Reply", "break"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil || string(got) != "data: partial\n\n" {
		t.Errorf("read %q, %v; want the partial event and an error", got, err)
	}
}

// A body over the cap is refused before or while it is forwarded.
func TestRequestBodyCap(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	over := bytes.Repeat([]byte("x"), MaxRequestBytes+1)
	e := roundTrip(t, h.client, newRequest(t, "POST", proxyURL("/tokenize"), bytes.NewReader(over)))
	oneLineJSONError(t, e, 413, "invalid_request_error", "over the cap")
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	e = roundTrip(t, h.client, newRequest(t, "POST", proxyURL("/tokenize"), io.MultiReader(bytes.NewReader(over))))
	if e.status != 413 {
		t.Errorf("a chunked body over the cap: status %d %s", e.status, e.body)
	}
}

// A proxy named in the environment is not used.
func TestIgnoresEnvironmentProxy(t *testing.T) {
	up := startRecorder(t)
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	t.Setenv("NO_PROXY", "")
	h := startProxy(t, strings.Replace(up.srv.URL, "127.0.0.1", "localhost", 1), Options{})
	if e := roundTrip(t, h.client, newRequest(t, "GET", proxyURL("/health"), nil)); e.status != 200 {
		t.Errorf("status %d %s", e.status, e.body)
	}
}

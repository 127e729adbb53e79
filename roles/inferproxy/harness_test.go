package inferproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sock"
)

// harness is an inferproxy serving on a socket in a fresh directory, with
// a client that dials that socket and a log the test can read.
type harness struct {
	socket string
	client *http.Client
	logs   *syncbuf.Buffer
}

// startProxy serves with opts, forwarding to upstream unless opts names one.
func startProxy(tb testing.TB, upstream string, opts Options) *harness {
	tb.Helper()
	h := &harness{socket: filepath.Join(shortDir(tb), "run", "loopd-inferproxy", "infer.sock"), logs: &syncbuf.Buffer{}}
	ln, err := sock.Listen(h.socket)
	if err != nil {
		tb.Fatal(err)
	}
	if opts.Upstream == "" {
		opts.Upstream = upstream
	}
	if opts.Log == nil {
		opts.Log = log.New(h.logs, "inferproxy: ", 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, opts) }()
	h.client = unixClient(h.socket)
	tb.Cleanup(func() {
		h.client.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Serve: %v", err)
			}
		case <-time.After(shutdownGrace + poll.Patience):
			tb.Errorf("Serve did not return %v after its context ended\n%s", shutdownGrace+poll.Patience, h.logs)
		}
	})
	return h
}

// shortDir is a fresh directory with a short path: a socket path must fit
// in 108 bytes, and t.TempDir's may not.
func shortDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "inferproxy")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// unixClient speaks HTTP over the socket at path, changing nothing it
// sends or receives.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
	}}
}

// directClient talks to the upstream over TCP with the same settings.
func directClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 16}}
}

// proxyURL is the URL a client of the socket uses for path.
func proxyURL(path string) string { return "http://infer.sock" + path }

// exchange is one request and its whole response, as a client saw it.
type exchange struct {
	status  int
	header  http.Header
	length  int64
	chunked bool
	body    []byte
}

func roundTrip(tb testing.TB, c *http.Client, req *http.Request) exchange {
	tb.Helper()
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: reading: %v", req.Method, req.URL, err)
	}
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	return exchange{resp.StatusCode, resp.Header, resp.ContentLength, chunked, body}
}

// seen is a request as the upstream received it.
type seen struct {
	method, uri, host string
	header            http.Header
	chunked           bool
	length            int64
	body              []byte
}

// recorder is a test upstream that records each request and answers as
// its X-Test-Reply header asks.
type recorder struct {
	srv     *httptest.Server
	mu      sync.Mutex
	seen    []seen
	release chan struct{} // "hold" replies wait for it
	gone    chan struct{} // closed when a held request's client went away
}

func startRecorder(t testing.TB) *recorder {
	r := &recorder{release: make(chan struct{}), gone: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (u *recorder) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.seen...)
}

// fixedDate keeps two answers comparable byte for byte.
const fixedDate = "Tue, 01 Sep 2026 10:00:00 GMT"

func (u *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, seen{r.Method, r.RequestURI, r.Host, r.Header.Clone(),
		len(r.TransferEncoding) > 0, r.ContentLength, body})
	u.mu.Unlock()
	w.Header().Set("Date", fixedDate)
	w.Header().Set("X-Upstream", "recorder")
	rc := http.NewResponseController(w)
	switch r.Header.Get("X-Test-Reply") {
	case "echo":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(body)
	case "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 5 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"%d\"}}]}\n\n", i)
			rc.Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	case "hold":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		rc.Flush()
		select {
		case <-u.release:
			io.WriteString(w, "data: second\n\n")
		case <-r.Context().Done():
			close(u.gone)
		}
	case "error":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
	case "bare":
		w.Header()["Date"] = nil
		w.Write([]byte("<html>not json</html>"))
	case "break":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: partial\n\n")
		rc.Flush()
		panic(http.ErrAbortHandler)
	default:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"status":"ok","path":%q}`, r.URL.Path)
	}
}

// within fails the test if f does not return in d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s took longer than %v", what, d)
	}
}

func newRequest(tb testing.TB, method, url string, body io.Reader, header ...string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

func oneLineJSONError(t *testing.T, e exchange, status int, typ, part string) {
	t.Helper()
	body := string(e.body)
	want := fmt.Sprintf(`{"error":{"code":%d,"message":"inferproxy: `, status)
	if e.status != status || !strings.HasPrefix(body, want) || !strings.HasSuffix(body, `","type":"`+typ+`"}}`) ||
		!strings.Contains(body, part) || strings.Contains(body, "\\n") {
		t.Errorf("status %d body %s; want %d, type %s, one line containing %q", e.status, body, status, typ, part)
	}
	if e.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", e.header.Get("Content-Type"))
	}
}

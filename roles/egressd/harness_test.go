package egressd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/roles/internal/sock"
)

// errFakeDial stands in for a connect to a non-loopback address: the tests
// never send a packet anywhere but loopback.
var errFakeDial = errors.New("test: connect to a non-loopback address faked")

// harness is a running egressd on a socket in a fresh directory, with a
// stub resolver, a log the test can read, and a record of every address
// that passed the checks and reached the dialer's Control.
type harness struct {
	t        *testing.T
	path     string
	resolver *stubResolver
	logs     *syncbuf.Buffer

	mu     sync.Mutex
	dialed []netip.AddrPort
}

// testLimits are short enough for tests and loose enough for -race.
var testLimits = config.Egress{MaxBytes: 1 << 20, Timeout: config.Dur(5 * time.Second), MaxRedirects: 3}

// startEgressd serves with opts, filling in the harness's resolver, log,
// test roots and dial hook where opts leaves them empty.
func startEgressd(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, resolver: newStubResolver(), logs: &syncbuf.Buffer{}}
	dir, err := os.MkdirTemp("", "egressd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h.path = filepath.Join(dir, "run", "brokerd-egressd", "egress.sock")
	ln, err := sock.Listen(h.path)
	if err != nil {
		t.Fatal(err)
	}
	h.fill(&opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

func (h *harness) fill(opts *Options) {
	if opts.Limits == (config.Egress{}) {
		opts.Limits = testLimits
	}
	if opts.Resolver == nil {
		opts.Resolver = h.resolver
	}
	if opts.RootCAs == nil {
		opts.RootCAs = testRoots(h.t)
	}
	opts.Log = log.New(h.logs, "", 0)
	opts.beforeConnect = h.beforeConnect
}

// beforeConnect records the address and lets only loopback through.
func (h *harness) beforeConnect(ap netip.AddrPort) error {
	h.mu.Lock()
	h.dialed = append(h.dialed, ap)
	h.mu.Unlock()
	if !ap.Addr().Unmap().IsLoopback() {
		return errFakeDial
	}
	return nil
}

func (h *harness) dialedAddrs() []netip.AddrPort {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]netip.AddrPort(nil), h.dialed...)
}

// exchange opens an egress call for hosts (and auth), writes raw on the
// sandbox's end as the sandbox would, and returns every byte egressd wrote
// back, parsed and raw.
func (h *harness) exchange(hosts []string, auth *string, raw string) (*http.Response, []byte) {
	h.t.Helper()
	method, _, _ := strings.Cut(raw, " ")
	if method != http.MethodPost {
		method = http.MethodGet
	}
	return h.exchangeAs(hosts, method, auth, raw)
}

// exchangeAs is exchange with the egress_open method given, as brokerd gives
// it: GET for http_fetch, POST for consult.
func (h *harness) exchangeAs(hosts []string, method string, auth *string, raw string) (*http.Response, []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end, err := fdpass.OpenEgress(ctx, h.path, hosts, method, auth)
	if err != nil {
		h.t.Fatalf("OpenEgress: %v", err)
	}
	conn, err := net.FileConn(end)
	end.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		h.t.Fatal(err)
	}
	back, err := io.ReadAll(conn)
	if err != nil {
		h.t.Fatalf("reading the answer: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(back)), nil)
	if err != nil {
		h.t.Fatalf("egressd's answer %q: %v", back, err)
	}
	return resp, back
}

// get fetches url with GET as a well-behaved sandbox writes it.
func (h *harness) get(hosts []string, url string) (*http.Response, string) {
	h.t.Helper()
	resp, _ := h.exchange(hosts, nil, proxyRequest(h.t, http.MethodGet, url, nil, ""))
	return resp, bodyOf(h.t, resp)
}

// proxyRequest is a request in absolute form, as http.Request.WriteProxy
// writes it.
func proxyRequest(t *testing.T, method, url string, header http.Header, body string) string {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	var buf bytes.Buffer
	if err := req.WriteProxy(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func bodyOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// wantRefused checks that egressd refused the call with 403.
func wantRefused(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(errorHeader) != "refused" {
		t.Errorf("%s: status %d, %s %q; want 403 refused", what, resp.StatusCode, errorHeader, resp.Header.Get(errorHeader))
	}
}

// upstream is a loopback test server that counts its requests.
type upstream struct {
	*httptest.Server
	hits atomic.Int32
}

func newUpstream(t *testing.T, tls bool, handler http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		handler(w, r)
	})
	u.Server = httptest.NewUnstartedServer(wrapped)
	// Handshakes that egressd refuses on purpose are not news.
	u.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		u.StartTLS()
	} else {
		u.Start()
	}
	t.Cleanup(u.Close)
	return u
}

// hostPort is the server's 127.0.0.1:port.
func (u *upstream) hostPort() string {
	return strings.TrimPrefix(strings.TrimPrefix(u.URL, "https://"), "http://")
}

func (u *upstream) port() string {
	_, port, _ := net.SplitHostPort(u.hostPort())
	return port
}

func hello(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }

// testRoots trusts httptest's certificate, which names 127.0.0.1, ::1 and
// example.com.
func testRoots(t *testing.T) *x509.CertPool {
	s := httptest.NewUnstartedServer(nil)
	s.StartTLS()
	defer s.Close()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return pool
}

// stubResolver answers from a table, one answer per query in turn (the last
// one repeats), and counts the queries for each name.
type stubResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	asked   map[string]int
}

func newStubResolver() *stubResolver {
	return &stubResolver{answers: map[string][][]netip.Addr{}, asked: map[string]int{}}
}

// set makes name answer each of answers in turn; an answer is a
// comma-separated list of addresses.
func (r *stubResolver) set(name string, answers ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var list [][]netip.Addr
	for _, a := range answers {
		var addrs []netip.Addr
		for _, s := range strings.Split(a, ",") {
			addrs = append(addrs, netip.MustParseAddr(s))
		}
		list = append(list, addrs)
	}
	r.answers[name] = list
}

func (r *stubResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.asked[host]
	r.asked[host]++
	list, ok := r.answers[host]
	if !ok || network != "ip" {
		return nil, fmt.Errorf("stub resolver: no such host %q (%s)", host, network)
	}
	return list[min(n, len(list)-1)], nil
}

func (r *stubResolver) queries(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked[host]
}

func (r *stubResolver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.asked {
		n += c
	}
	return n
}

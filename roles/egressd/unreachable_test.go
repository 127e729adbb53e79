package egressd

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// resolverFunc is a Resolver from a function.
type resolverFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	return f(ctx, host)
}

// TestUnreachableSaysWhy: when the web cannot be reached (no name server
// answers, the name does not exist, nothing listens) the sandbox is told
// why, soon, without the name server's or any resolved address; the log
// keeps the whole error.
func TestUnreachableSaysWhy(t *testing.T) {
	silent := resolverFunc(func(ctx context.Context, host string) ([]netip.Addr, error) {
		<-ctx.Done() // a name server that never answers
		return nil, &net.DNSError{Err: "i/o timeout", Name: host, Server: "10.9.8.7:53", IsTimeout: true}
	})
	failing := resolverFunc(func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "gone.test" {
			return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.8.7:53", IsNotFound: true}
		}
		return nil, &net.DNSError{Err: "read udp 10.0.0.2:41234->10.9.8.7:53: connection refused", Name: host, Server: "10.9.8.7:53"}
	})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close() // nothing listens there now
	for _, c := range []struct {
		name     string
		resolver Resolver
		hosts    []string
		url      string
		says     string
	}{
		{"silent name server", silent, []string{"slow.test"}, "https://slow.test/", "could not resolve slow.test: the name server did not answer within 300ms (is this machine offline?)"},
		{"no such name", failing, []string{"gone.test"}, "https://gone.test/", "could not resolve gone.test: no such host"},
		{"name server refuses", failing, []string{"x.test"}, "https://x.test/", "could not resolve x.test: the name server failed: connection refused"},
		{"nothing listens", nil, []string{"http://127.0.0.1:" + strconv.Itoa(port)}, "http://127.0.0.1:" + strconv.Itoa(port) + "/", "could not connect to 127.0.0.1:" + strconv.Itoa(port) + ": connection refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := startEgressd(t, Options{Resolver: c.resolver, resolveTimeout: 300 * time.Millisecond})
			start := time.Now()
			resp, _ := h.exchange(c.hosts, nil, rawGet(c.url))
			body := bodyOf(t, resp)
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(errorHeader) != "upstream" || strings.TrimSpace(body) != c.says {
				t.Errorf("status %d, %s %q, body %q; want 502 upstream saying %q", resp.StatusCode, errorHeader, resp.Header.Get(errorHeader), body, c.says)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the answer took %s", took)
			}
			if strings.Contains(body, "10.9.8.7") || strings.Contains(body, "dial tcp") {
				t.Errorf("the body names an address or the dialer's words: %q", body)
			}
			if c.resolver != nil && !strings.Contains(h.logs.String(), "10.9.8.7:53") {
				t.Errorf("the log lacks the whole error:\n%s", h.logs)
			}
		})
	}
}

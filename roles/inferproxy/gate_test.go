package inferproxy

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/fixtures/poll"
	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// infer.sock serves exactly its row of the role table, with the table's
// peer check (Options.AllowPeer left nil): each listed route is forwarded,
// every other method and path is refused with 403.
func TestInferSockServesItsPair(t *testing.T) {
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	pair, _ := roles.PairOf("loopd", "inferproxy")
	// Each probe is bounded: a request nobody answers fails the test,
	// naming the request, instead of running into go test's timeout.
	probe := *h.client
	probe.Timeout = poll.Patience
	gateprobe.HTTP(t, &probe, proxyURL(""), pair)
	if n := len(up.requests()); n != len(pair.Accepts) {
		t.Errorf("the upstream got %d requests; want one per listed route, %d", n, len(pair.Accepts))
	}
}

// A Serve that cannot start closes its socket, so that a client is refused
// at once instead of waiting in the backlog for an answer that never comes
// (which hung TestInferSockServesItsPair when Serve failed).
func TestServeThatCannotStartClosesItsSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "infer.sock")
	ln, err := sock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), ln, Options{Upstream: "ftp://nowhere", Log: log.New(io.Discard, "", 0)}); err == nil {
		t.Fatal("Serve started with an ftp upstream")
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Fatal("a client connected to the socket of a Serve that had returned")
	}
}

// A connection past the gate's bound is answered 503, in llama-server's
// error shape, once its request has arrived.
func TestBusyRefusalIs503(t *testing.T) {
	ours, theirs := unixPair(t)
	go refuse(theirs, sock.Refusal{Code: wire.Internal, Detail: "too many connections (limit 64)"})
	if _, err := io.WriteString(ours, "GET /health HTTP/1.1\r\nHost: infer.sock\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(ours), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `{"error":{"code":503,"message":"inferproxy: too many connections (limit 64)","type":"unavailable_error"}}`
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != want {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
}

// unixPair is a connected pair of Unix stream sockets.
func unixPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ours, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ours.Close() })
	theirs, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	return ours, theirs
}

// infer.sock answers exactly the routes the role table lets through it:
// none the gate passes goes unanswered, none is answered that it refuses.
func TestEveryInferKindHasItsRow(t *testing.T) {
	if err := sock.CheckKinds(sock.Accepted("", "inferproxy"), (&proxy{}).routeChecks()); err != nil {
		t.Error(err)
	}
}

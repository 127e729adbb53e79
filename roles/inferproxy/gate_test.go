package inferproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"boxmaker/fixtures/gateprobe"
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
	gateprobe.HTTP(t, h.client, proxyURL(""), pair)
	if n := len(up.requests()); n != len(pair.Accepts) {
		t.Errorf("the upstream got %d requests; want one per listed route, %d", n, len(pair.Accepts))
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

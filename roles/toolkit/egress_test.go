//go:build linux && amd64

package toolkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// seenRequest is what the fake egressd received.
type seenRequest struct {
	Method, URI, Host string
	Header            http.Header
	Body              string
}

// egressPeer stands in for egressd: it answers one request on the far end
// of a socketpair and reports what it saw. The near end is what brokerd
// would hand the sandbox as fd 3.
func egressPeer(t *testing.T, status int, contentType, body string) (*os.File, <-chan seenRequest) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	near, far := os.NewFile(uintptr(fds[0]), "egress-tool"), os.NewFile(uintptr(fds[1]), "egress-peer")
	conn, err := net.FileConn(far)
	far.Close()
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan seenRequest, 1)
	go func() {
		defer conn.Close()
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			close(seen)
			return
		}
		data, _ := io.ReadAll(req.Body)
		seen <- seenRequest{req.Method, req.RequestURI, req.Host, req.Header, string(data)}
		fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			status, http.StatusText(status), contentType, len(body), body)
	}()
	t.Cleanup(func() { near.Close() })
	return near, seen
}

// egressConnFor wraps the near end as toolkit does with fd 3.
func egressConnFor(t *testing.T, near *os.File) net.Conn {
	t.Helper()
	conn, err := net.FileConn(near)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Remote is a remote server (DESIGN.md section 16), reached only through
// Channel: toolkit's sandbox has no network, and every HTTP connection it
// makes is one end of a fresh socketpair sent to egressd on Channel, which
// does the TLS, adds the secret and reaches the one origin of URL.
type Remote struct {
	URL     string
	Channel *net.UnixConn
}

// RemoteMaxEvent bounds one server-sent event: below egressd's default
// max_bytes (4 MiB), so that a huge event fails the call with the SDK's
// clear error rather than a cut stream, and far above any result brokerd
// keeps.
const RemoteMaxEvent = 2 << 20

// ServeRemote connects to r and answers brokerd's frames as Serve does.
func ServeRemote(ctx context.Context, in io.Reader, out io.Writer, diag io.Writer, r Remote, lim Limits) error {
	f := &frames{out: out, diag: newLines(diag)}
	sctx, cancel := context.WithTimeout(ctx, lim.StartTime)
	defer cancel()
	transport := &mcp.StreamableClientTransport{Endpoint: r.URL, HTTPClient: channelClient(r.Channel), MaxEventSize: RemoteMaxEvent}
	cs, err := newClient(f).Connect(sctx, transport, nil)
	if err != nil {
		if sctx.Err() != nil {
			err = fmt.Errorf("%w: no MCP handshake within %v: %s", ErrEnded, lim.StartTime, oneLine(err.Error()))
		} else {
			err = fmt.Errorf("%w: the MCP handshake failed: %s", ErrEnded, oneLine(err.Error()))
		}
		return failStart(in, f, err)
	}
	defer stop(cs, nil)
	return serveFrames(ctx, in, f, cs, lim)
}

// channelClient is an HTTP client whose every connection goes through ch.
// It speaks plain HTTP/1.1 on it even for https (egressd does the TLS),
// keeps a connection for the next request (egressd serves one request
// after another on it, each response chunked), and follows no redirect.
func channelClient(ch *net.UnixConn) *http.Client {
	d := &channelDialer{ch: ch}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Client{
		Transport: egressErrors{&http.Transport{
			Proxy:                  nil,
			DialContext:            d.dial,
			DialTLSContext:         d.dial, // egressd does the TLS with the url's host
			Protocols:              &protocols,
			IdleConnTimeout:        remoteIdle,
			DisableCompression:     true,
			MaxResponseHeaderBytes: 64 << 10,
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("boxmaker's MCP client follows no redirect")
		},
	}
}

// remoteIdle is how long a kept connection waits for the next request:
// less than egressd's 30 seconds, so that the client ends it first and
// never sends a request on a connection egressd is closing.
const remoteIdle = 20 * time.Second

// channelDialer makes one connection: a socketpair, one end sent to egressd
// on the channel beside one byte, the other end returned.
type channelDialer struct {
	mu sync.Mutex // one send at a time, so that each byte carries its descriptor
	ch *net.UnixConn
}

func (d *channelDialer) dial(context.Context, string, string) (net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("egress channel: socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "mcp-conn"), os.NewFile(uintptr(fds[1]), "mcp-conn-egressd")
	defer mine.Close()
	defer theirs.Close()
	d.mu.Lock()
	_, _, err = d.ch.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(theirs.Fd())), nil)
	d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("egress channel: %w", err)
	}
	return net.FileConn(mine)
}

// egressErrors turns egressd's own answers (a refusal, a timeout, an
// upstream that failed: X-Boxmaker-Error, which egressd drops from any
// upstream's response) into errors that carry its sentence, which the SDK
// would otherwise reduce to a status text.
type egressErrors struct{ next http.RoundTripper }

func (e egressErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.next.RoundTrip(req)
	if err != nil || resp.Header.Get("X-Boxmaker-Error") == "" {
		return resp, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return nil, fmt.Errorf("egressd (%s): %s", resp.Header.Get("X-Boxmaker-Error"), strings.TrimSpace(string(body)))
}

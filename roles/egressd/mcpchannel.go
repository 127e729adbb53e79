package egressd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Bounds of one channel.
const (
	// maxMCPConns bounds the connections a channel has open at once: the
	// streamable HTTP client needs a POST or two, the GET stream and a
	// resumption. One more is refused by closing it.
	maxMCPConns = 8
	// mcpIdle is how long a connection (the sandbox's, and the upstream
	// one kept beside it) may wait for its next request.
	mcpIdle = 30 * time.Second
)

// channel is one remote MCP instance's link to egressd.
type channel struct {
	s     *server
	grant mcpGrant
	guard *guard      // dials the url's origin and nothing else
	tls   *tls.Config // the server's name is set per connection
	conns chan struct{}
	wg    sync.WaitGroup
	lines *lineLimiter // the sandbox decides how many lines there are
}

// serveChannel takes the descriptors the sandbox sends on ch and serves
// requests on each, until ch ends (the instance ended) or ctx does; then it
// ends every connection it still serves.
func (s *server) serveChannel(ctx context.Context, ch *net.UnixConn, g mcpGrant) {
	defer ch.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ch.Close() })
	defer stop()
	c := &channel{s: s, grant: g, conns: make(chan struct{}, maxMCPConns), lines: newLineLimiter(s.log)}
	c.guard = s.newGuard(g.hosts)
	c.guard.approve(g.target)
	c.tls = &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12}
	defer c.wg.Wait()
	defer cancel() // before the Wait: the connections end with the channel
	for {
		conn, err := receiveConn(ch)
		switch {
		case errors.Is(err, errNoDescriptor):
			continue // dropped; the channel goes on
		case err != nil:
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				s.log.Printf("mcp %s: channel ended: %v", g.target.Authority(), err)
			}
			return
		}
		select {
		case c.conns <- struct{}{}:
		default:
			c.lines.print(fmt.Sprintf("mcp %s: refused a connection: %d are open already", g.target.Authority(), maxMCPConns))
			conn.Close()
			continue
		}
		c.wg.Go(func() {
			defer func() { <-c.conns }()
			c.serveConn(ctx, conn)
		})
	}
}

// errNoDescriptor is a byte that came on the channel without a stream
// socket beside it.
var errNoDescriptor = errors.New("a byte came on the channel without a stream socket")

// receiveConn reads one byte and the one descriptor beside it, which must
// be a Unix stream socket. Extra descriptors are closed.
func receiveConn(ch *net.UnixConn) (net.Conn, error) {
	var b [1]byte
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := ch.ReadMsgUnix(b[:], oob)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, io.EOF
	}
	files := parseRights(oob[:oobn])
	if len(files) == 0 {
		return nil, errNoDescriptor
	}
	for _, f := range files[1:] {
		f.Close()
	}
	if !isStreamSocket(files[0]) {
		files[0].Close()
		return nil, errNoDescriptor
	}
	conn, err := sandboxConn(files[0])
	if err != nil {
		return nil, errNoDescriptor
	}
	wrapped, err := dontWait(conn)
	if err != nil {
		conn.Close()
		return nil, errNoDescriptor
	}
	return wrapped, nil
}

// isStreamSocket reports whether f is a stream socket: a datagram socket
// would carry requests egressd never meant to read.
func isStreamSocket(f *os.File) bool {
	raw, err := f.SyscallConn()
	if err != nil {
		return false
	}
	typ := -1
	_ = raw.Control(func(fd uintptr) {
		typ, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TYPE)
	})
	return typ == syscall.SOCK_STREAM
}

// parseRights wraps every descriptor in oob at once, so that none leaks.
func parseRights(oob []byte) []*os.File {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for i := range msgs {
		if msgs[i].Header.Level != syscall.SOL_SOCKET || msgs[i].Header.Type != syscall.SCM_RIGHTS {
			continue
		}
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "mcp connection"))
		}
	}
	return files
}

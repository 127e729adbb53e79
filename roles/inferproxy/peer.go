package inferproxy

import (
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"boxmaker/roles/internal/sock"
)

// peerListener hands the HTTP server only connections whose peer uid the
// socket accepts, checked with SO_PEERCRED before a byte is read, so no
// other uid's request is ever parsed.
type peerListener struct {
	*net.UnixListener
	allow func(sock.Peer) bool
	log   *log.Logger
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		peer, err := sock.PeerOf(c)
		if err == nil && l.allow(peer) {
			return c, nil
		}
		l.log.Printf("refused a connection from uid %d pid %d (%v)", peer.UID, peer.PID, err)
		go refuse(c)
	}
}

// refusedBody says why, for a person who tries the socket with curl.
const refusedBody = `{"error":{"code":403,"message":"inferproxy: this socket does not accept your uid","type":"permission_error"}}`

// refuseTime bounds how long a refused connection is kept to deliver the
// answer.
const refuseTime = time.Second

// refuse answers 403 and ends the connection. It waits for the peer's
// first bytes, unparsed and discarded, so that an HTTP client sees the
// answer to its request rather than an unsolicited response, and after
// answering it discards what the peer still sends for a moment: closing
// with unread data would reset the connection and lose the answer.
func refuse(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseTime))
	if _, err := c.Read(make([]byte, 4<<10)); err != nil {
		return
	}
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		len(refusedBody), refusedBody)
	_ = c.CloseWrite()
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

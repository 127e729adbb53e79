package inferproxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// refusedBody says why, for a person who tries the socket with curl.
const refusedBody = `{"error":{"code":403,"message":"inferproxy: this socket does not accept your uid","type":"permission_error"}}`

// refuseTime bounds how long a refused connection is kept to deliver the
// answer.
const refuseTime = time.Second

// refuse answers a connection the gate refused, 403 for a uid it does not
// accept and 503 past its bound on connections, and ends it. It waits for
// the peer's first bytes, unparsed and discarded, so that an HTTP client
// sees the answer to its request rather than an unsolicited response, and
// after answering it discards what the peer still sends for a moment:
// closing with unread data would reset the connection and lose the answer.
func refuse(c *net.UnixConn, why sock.Refusal) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseTime))
	if _, err := c.Read(make([]byte, 4<<10)); err != nil {
		return
	}
	status, body := http.StatusForbidden, refusedBody
	if why.Code != wire.BadMessage {
		status, body = http.StatusServiceUnavailable, string(errorBody(http.StatusServiceUnavailable, "unavailable_error", why.Detail))
	}
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	_ = c.CloseWrite()
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

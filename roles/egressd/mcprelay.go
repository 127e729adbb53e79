package egressd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// link is egressd's side of one sandbox connection, which carries one
// request after another (keep-alive): a response goes back chunked, so
// that egressd can cut it and take the secret out of it as it streams and
// still say where it ends.
type link struct {
	conn net.Conn
	lr   *io.LimitedReader // bounds a request's head, then its body
	br   *bufio.Reader
	bw   *bufio.Writer
	buf  []byte // the body's reads, reused from request to request
}

func newLink(conn net.Conn) *link {
	lr := &io.LimitedReader{R: conn, N: maxHeaderBytes}
	return &link{conn: conn, lr: lr, br: bufio.NewReader(lr), bw: bufio.NewWriterSize(conn, 32<<10), buf: make([]byte, 32<<10)}
}

// next waits up to wait for the first byte of the next request; then the
// whole of it, head and body, must come within mcpHeadTime.
func (l *link) next(wait time.Duration) bool {
	l.lr.N = maxHeaderBytes
	_ = l.conn.SetReadDeadline(time.Now().Add(wait))
	if _, err := l.br.Peek(1); err != nil {
		return false
	}
	return l.conn.SetReadDeadline(time.Now().Add(mcpHeadTime)) == nil
}

// readRequest reads a request's head, at most maxHeaderBytes, and leaves
// room for its body.
func (l *link) readRequest() (*http.Request, error) {
	req, err := http.ReadRequest(l.br)
	if err != nil {
		return nil, err
	}
	l.lr.N = maxRequestBody + maxHeaderBytes
	return req, nil
}

// watcher cancels an exchange when the sandbox closes its end (the client
// gave up on a call or a stream: an upstream that sends nothing would
// otherwise hold the connection), or writes before the response is whole,
// which no HTTP/1.1 client of egressd's does.
type watcher struct {
	l        *link
	done     chan struct{}
	answered atomic.Bool // the response's last bytes are going out
	early    atomic.Bool // the sandbox wrote before that
}

// watch starts watching l; the request was read whole, so nothing more of
// it is due.
func (l *link) watch(cancel context.CancelFunc) *watcher {
	w := &watcher{l: l, done: make(chan struct{})}
	if l.br.Buffered() > 0 {
		// Written with the request (pipelined): the exchange never starts.
		w.early.Store(true)
		cancel()
	}
	_ = l.conn.SetReadDeadline(time.Time{})
	go func() {
		defer close(w.done)
		_, err := l.br.Peek(1)
		if err == nil && !w.answered.Load() {
			w.early.Store(true)
		}
		if err != nil || w.early.Load() {
			cancel()
		}
	}()
	return w
}

// stop ends the watch (a byte of the next request stays buffered) and
// reports whether the link may carry another request.
func (w *watcher) stop() bool {
	_ = w.l.conn.SetReadDeadline(time.Unix(1, 0))
	<-w.done
	return !w.early.Load()
}

// relay makes out upstream on up and streams the response to l, and
// reports whether both connections may carry the next request.
func (c *channel) relay(ctx context.Context, l *link, up *upstreamConn, out *http.Request, rec *record, w *watcher) (bool, error) {
	resp, err := up.roundTrip(ctx, out)
	if err != nil {
		up.drop()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return false, err
	}
	whole := false
	defer func() { up.done(resp, whole) }()
	rec.status = resp.StatusCode
	if err := c.checkResponse(resp); err != nil {
		return false, err
	}
	h := mcpResponseHeader(resp.Header, c.grant.secret)
	dropControlValues(h)
	fmt.Fprintf(l.bw, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	_ = h.Write(l.bw)
	if empty := resp.ContentLength == 0; empty || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		// No body may follow a 204 or 304, not even an empty chunked one;
		// a known-empty body (a notification's 202) goes out with its head
		// in one write: sent chunked, the client that reads the head and
		// closes (as Go's does) broke egressd's write of the last chunk,
		// a "broken pipe" line for a normal exchange.
		w.answered.Store(true)
		if empty && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified {
			_, _ = l.bw.WriteString("Content-Length: 0\r\n")
		}
		_, _ = l.bw.WriteString("\r\n")
		if err := l.bw.Flush(); err != nil {
			return false, fmt.Errorf("%w: writing the head: %v", errAnswered, err)
		}
		whole = true
		return true, nil
	}
	_, _ = l.bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	n, cut, err := c.stream(l, up, resp.Body, w)
	rec.bytes, rec.truncated = n, cut
	if cut {
		rec.addProblem(fmt.Sprintf("the response passed max_bytes (%d) and was cut", c.s.limits.MaxBytes))
	}
	if err != nil && ctx.Err() == nil {
		rec.addProblem(err.Error())
	}
	whole = err == nil && !cut
	return whole, nil
}

// stream copies body to l as it arrives, the secret taken out even when it
// is split across reads, and stops at max_bytes. Whatever was read goes
// out before egressd waits for more: it flushes after every read, and
// before a read unless the upstream's bytes are already here (then the
// head goes out with the first of the body).
func (c *channel) stream(l *link, up *upstreamConn, body io.Reader, w *watcher) (int, bool, error) {
	limit := c.s.limits.MaxBytes
	red := newStreamRedactor(c.grant.secret, chunkWriter{l.bw})
	total := 0
	for {
		if up.br.Buffered() == 0 {
			if err := l.bw.Flush(); err != nil {
				return total, false, err
			}
		}
		n, err := body.Read(l.buf)
		if total+n > limit {
			n = limit - total
			total += n
			_ = red.write(l.buf[:n])
			red.close(true)
			return total, true, l.end(w)
		}
		total += n
		if werr := red.write(l.buf[:n]); werr != nil {
			return total, false, werr
		}
		switch {
		case err == io.EOF:
			if err := red.close(false); err != nil {
				return total, false, err
			}
			return total, false, l.end(w)
		case err != nil:
			red.close(true)
			// No last chunk: the sandbox's client sees the body break
			// off, not end.
			_ = l.bw.Flush()
			return total, false, err
		case n > 0:
			if err := l.bw.Flush(); err != nil {
				return total, false, err
			}
		}
	}
}

// end writes the last chunk; what the sandbox writes after it is its next
// request.
func (l *link) end(w *watcher) error {
	w.answered.Store(true)
	_, _ = l.bw.WriteString("0\r\n\r\n")
	return l.bw.Flush()
}

// chunkWriter writes each write as one chunk of a chunked body.
type chunkWriter struct{ w *bufio.Writer }

func (cw chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // an empty chunk would end the body
	}
	var size [16]byte
	_, _ = cw.w.Write(strconv.AppendInt(size[:0], int64(len(p)), 16))
	_, _ = cw.w.WriteString("\r\n")
	_, _ = cw.w.Write(p)
	_, err := cw.w.WriteString("\r\n")
	return len(p), err
}

package sock

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// ErrPeerGone is the cause (context.Cause) of a handler's context when the
// peer hung up before its request was answered, so that a handler waiting
// for something slow, such as the owner's approval, stops instead of acting
// for a caller that is no longer there.
var ErrPeerGone = errors.New("the peer hung up")

// connReader is what the serve loop reads a connection through. While a
// handler runs it also watches the connection, as net/http's connReader
// does in backgroundRead: nobody else reads then, so without the watch a
// hangup would go unnoticed until the handler next wrote.
//
// The serve loop and the watch never read at the same time: watch is
// started after a request was read and stopped before the next one is
// (watchman.begin and end).
type connReader struct {
	conn *net.UnixConn
	// peekOnly makes the watch peek rather than read, leaving the byte,
	// and any descriptor sent with it, in the socket: a frame that carries
	// a descriptor must be read whole by fdpass.
	peekOnly bool
	// kept holds bytes the watch read: the start of the peer's next frame,
	// which Read hands out before anything still in the socket.
	kept []byte
	// err is how the stream ended, once the watch saw it end.
	err error

	// The watch of the request being handled (watchman.go): where it
	// stands, the handler's cancel, and done, closed when a started watch
	// has ended.
	state  atomic.Int32
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// aLongTimeAgo is a read deadline that has passed, which wakes a blocked
// Read at once; net/http stops its background read the same way.
var aLongTimeAgo = time.Unix(1, 0)

// Read returns kept bytes first, then reads the connection.
func (cr *connReader) Read(p []byte) (int, error) {
	if len(cr.kept) > 0 {
		n := copy(p, cr.kept)
		cr.kept = cr.kept[n:]
		return n, nil
	}
	if cr.err != nil {
		return 0, cr.err
	}
	return cr.conn.Read(p)
}

// watch reads the connection in the background until stopWatch ends it:
// the watchman (watchman.go) starts it on its own goroutine once a handler
// has run for a tick. If the stream ends or fails, it cancels the handler
// with ErrPeerGone. If a byte arrives instead, it is the start of the
// peer's next frame: it is kept for Read (with peekOnly, left in the
// socket) and the watch ends there, as net/http's does. Peers here take
// turns (sock.Client holds its lock until the final frame), so that byte
// only comes from a peer that pipelines, and such a peer could hold a
// request open anyway by simply staying connected.
func (cr *connReader) watch() {
	defer close(cr.done)
	if err := cr.awaitNext(); err != nil && !stopped(err) {
		cr.err = err
		cr.cancel(ErrPeerGone)
	}
}

// stopWatch ends a watch that started: a deadline in the past ends its read
// at once, or makes the read it is about to begin fail, and the next read
// gets no deadline again.
func (cr *connReader) stopWatch() {
	_ = cr.conn.SetReadDeadline(aLongTimeAgo)
	<-cr.done
	_ = cr.conn.SetReadDeadline(time.Time{})
}

// awaitNext waits for the peer's next byte, keeping it unless peekOnly.
func (cr *connReader) awaitNext() error {
	if cr.peekOnly {
		return awaitByte(cr.conn)
	}
	var b [1]byte
	n, err := cr.conn.Read(b[:])
	cr.kept = append(cr.kept, b[:n]...)
	return err
}

// stopped reports whether a read ended because this side stopped it (the
// deadline stop sets, or the connection closed as the server shuts down)
// rather than because of the peer.
func stopped(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed)
}

package sock

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"boxmaker/roles/internal/fdpass"
	"boxmaker/wire"
)

// request is one frame as the gate read it and, on a socket whose frames
// carry a descriptor, the descriptor that came with it.
type request struct {
	wire.Envelope
	file *os.File
}

// frameReader reads the requests of one connection: through a buffer, or,
// where frames carry descriptors, straight from the socket with fdpass, so
// that each descriptor stays with its own frame (a buffer would take the
// next frame's bytes, and its descriptor, along with this one's).
type frameReader struct {
	cr  *connReader
	buf *bufio.Reader // nil where frames carry descriptors
}

func newFrameReader(c *net.UnixConn, descriptors bool) *frameReader {
	cr := &connReader{conn: c, peekOnly: descriptors}
	if descriptors {
		return &frameReader{cr: cr}
	}
	return &frameReader{cr: cr, buf: bufio.NewReader(cr)}
}

// next waits as long as it takes for a frame to start, then allows the
// rest of it limit (see DefaultFrameTimeout for why). On a decoded frame
// that came without its descriptor it returns the envelope beside the
// error, so that the answer can carry its id and the gate its kind.
func (fr *frameReader) next(limit time.Duration) (request, error) {
	if err := fr.awaitFrame(); err != nil {
		return request{}, err
	}
	if fr.buffered() {
		return fr.read() // nothing left to wait for, so nothing to bound
	}
	c := fr.cr.conn
	if err := c.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return request{}, err
	}
	req, err := fr.read()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return request{}, wire.WireError{Code: wire.BadFrame, Detail: fmt.Sprintf("the rest of the frame did not arrive within %v", limit)}
	}
	if err != nil {
		return req, err
	}
	return req, c.SetReadDeadline(time.Time{})
}

// buffered reports whether the whole of the next frame is in the buffer
// already, as a frame written in one Write usually is by the time its first
// byte is seen. Setting and clearing a read deadline costs two timer
// changes, each of which may wake the network poller.
func (fr *frameReader) buffered() bool {
	if fr.buf == nil || fr.buf.Buffered() < wire.HeaderSize {
		return false
	}
	hdr, err := fr.buf.Peek(wire.HeaderSize)
	return err == nil && fr.buf.Buffered()-wire.HeaderSize >= int(binary.BigEndian.Uint32(hdr))
}

func (fr *frameReader) awaitFrame() error {
	if fr.buf == nil {
		return awaitByte(fr.cr.conn)
	}
	_, err := fr.buf.Peek(1)
	return err
}

func (fr *frameReader) read() (request, error) {
	if fr.buf == nil {
		e, f, err := fdpass.ReceiveFrameWithFile(fr.cr.conn)
		return request{Envelope: e, file: f}, err
	}
	e, err := wire.ReadEnvelope(fr.buf)
	return request{Envelope: e}, err
}

// awaitByte blocks until c has a byte to read, or returns io.EOF once the
// peer's stream ended, without taking the byte: it peeks (MSG_PEEK), so a
// descriptor sent with that byte stays in the socket for fdpass. A read
// deadline or Close ends the wait as they end a Read.
func awaitByte(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var peekErr error
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		for {
			n, _, peekErr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
			if peekErr != syscall.EINTR {
				return peekErr != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return err
	case peekErr != nil:
		return peekErr
	case n == 0:
		return io.EOF
	}
	return nil
}

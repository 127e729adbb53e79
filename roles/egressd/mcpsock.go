package egressd

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// dontWaitConn is a connection the sandbox sent on its channel. The sandbox
// made the socket and may keep a descriptor of it, which shares the open
// file description, and so O_NONBLOCK, with egressd's: once it clears the
// flag, Go's runtime, which reads and writes expecting EAGAIN, would block
// a thread in read(2) or write(2) where no deadline reaches it and Close
// waits for it, so the connection would outlive its channel and the
// channel its call slot. Every read and write here asks the kernel not to
// wait (MSG_DONTWAIT), whatever the description says, and waits in the
// poller instead, where deadlines and Close end it.
type dontWaitConn struct {
	net.Conn
	raw syscall.RawConn
}

// dontWait wraps a Unix stream connection from the sandbox.
func dontWait(conn net.Conn) (net.Conn, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("the connection has no descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &dontWaitConn{Conn: conn, raw: raw}, nil
}

func (c *dontWaitConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := 0, error(nil)
	waitErr := c.raw.Read(func(fd uintptr) bool {
		for {
			n, _, err = syscall.Recvfrom(int(fd), p, syscall.MSG_DONTWAIT)
			if err != syscall.EINTR {
				return err != syscall.EAGAIN
			}
		}
	})
	switch {
	case waitErr != nil: // a deadline, or Close
		return 0, waitErr
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "unix", Err: os.NewSyscallError("recvfrom", err)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *dontWaitConn) Write(p []byte) (int, error) {
	written, err := 0, error(nil)
	waitErr := c.raw.Write(func(fd uintptr) bool {
		err = nil
		for written < len(p) {
			var n int
			n, err = syscall.SendmsgN(int(fd), p[written:], nil, nil, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false
			case err != nil:
				return true
			}
			written += n
		}
		return true
	})
	switch {
	case waitErr != nil:
		return written, waitErr
	case err != nil:
		return written, &net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("sendmsg", err)}
	}
	return written, nil
}

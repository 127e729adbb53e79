package fdpass

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"boxmaker/wire"
)

// maxFiles is how many descriptors one read has room for. The kernel closes
// any beyond it and flags the read, and then the whole frame is refused.
const maxFiles = 8

// Sentinels for errors.Is. Both errors are also bad_message WireErrors, so
// that wire.CodeOf gives the code a listener answers with.
var (
	ErrNoFile     = errors.New("the frame came without a descriptor")
	ErrExtraFiles = errors.New("the frame came with more than one descriptor")
)

// SendFrameWithFile writes e as one frame on conn with f's descriptor beside
// its first byte, so that the receiver gets both from the same frame. f stays
// open: the receiver holds its own copy once this returns.
func SendFrameWithFile(conn *net.UnixConn, e wire.Envelope, f *os.File) error {
	var frame bytes.Buffer
	if err := wire.WriteEnvelope(&frame, e); err != nil {
		return err
	}
	// SyscallConn rather than Fd: Fd would switch f to blocking mode.
	raw, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("descriptor to send: %w", err)
	}
	var sendErr error
	err = raw.Control(func(fd uintptr) {
		sendErr = sendWithRights(conn, frame.Bytes(), int(fd))
	})
	if err != nil {
		return fmt.Errorf("descriptor to send: %w", err)
	}
	return sendErr
}

// sendWithRights sends b with fd attached. A stream socket may take only part
// of b; the rights travel with that part and the rest follows plainly.
func sendWithRights(conn *net.UnixConn, b []byte, fd int) error {
	n, _, err := conn.WriteMsgUnix(b, syscall.UnixRights(fd), nil)
	if err != nil {
		return err
	}
	if n < len(b) {
		_, err = conn.Write(b[n:])
	}
	return err
}

// ReceiveFrame reads exactly one frame from conn and returns its envelope
// with every descriptor that arrived while reading it, in order. On any
// error every descriptor that arrived is closed and none is returned.
//
// WARNING: conn must not be read through a buffer: a buffered reader would
// take the next frame's bytes, and its descriptors, with this one. Only
// ReceiveFrame reads conn (TestReceiveStopsAtTheFrameEnd).
func ReceiveFrame(conn *net.UnixConn) (wire.Envelope, []*os.File, error) {
	r := &rightsReader{conn: conn, oob: make([]byte, syscall.CmsgSpace(maxFiles*4))}
	payload, err := wire.ReadFrame(r)
	if err == nil {
		err = r.err
	}
	if err != nil {
		closeAll(r.files)
		return wire.Envelope{}, nil, err
	}
	e, err := wire.Decode(payload)
	if err != nil {
		closeAll(r.files)
		return wire.Envelope{}, nil, err
	}
	return e, r.files, nil
}

// ReceiveFrameWithFile reads one frame that must come with exactly one
// descriptor. Without one, it returns the envelope (so that the answer can
// carry its id) and ErrNoFile; with several, it closes them all and returns
// the envelope and ErrExtraFiles.
func ReceiveFrameWithFile(conn *net.UnixConn) (wire.Envelope, *os.File, error) {
	e, files, err := ReceiveFrame(conn)
	switch {
	case err != nil:
		return e, nil, err
	case len(files) == 0:
		return e, nil, badMessage(ErrNoFile, ErrNoFile.Error())
	case len(files) > 1:
		closeAll(files)
		return e, nil, badMessage(ErrExtraFiles, fmt.Sprintf("%v (%d)", ErrExtraFiles, len(files)))
	}
	return e, files[0], nil
}

// descriptorError is a frame whose descriptors are wrong: both its sentinel
// and a bad_message WireError, so that errors.Is and wire.CodeOf both work.
type descriptorError struct {
	sentinel error
	detail   string
}

func badMessage(sentinel error, detail string) error { return descriptorError{sentinel, detail} }

func (e descriptorError) Error() string { return e.detail }

func (e descriptorError) Unwrap() []error {
	return []error{e.sentinel, wire.WireError{Code: wire.BadMessage, Detail: e.detail}}
}

// rightsReader reads with recvmsg and keeps the descriptors that come along.
// Each Read asks for no more than its buffer, so it never crosses the end of
// the frame that wire.ReadFrame is reading.
type rightsReader struct {
	conn  *net.UnixConn
	oob   []byte
	files []*os.File
	err   error // a problem with the control data, kept until the frame is read
}

func (r *rightsReader) Read(p []byte) (int, error) {
	n, oobn, flags, _, err := r.conn.ReadMsgUnix(p, r.oob)
	r.collect(r.oob[:oobn], flags)
	switch {
	case err != nil:
		return n, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// collect wraps every descriptor in the control data as an *os.File at once,
// so that none can be lost on a later error. Go's ReadMsgUnix passes
// MSG_CMSG_CLOEXEC on Linux, so they never leak into a child.
func (r *rightsReader) collect(oob []byte, flags int) {
	if flags&syscall.MSG_CTRUNC != 0 {
		r.err = badMessage(ErrExtraFiles, fmt.Sprintf("more than %d descriptors came with the frame", maxFiles))
	}
	if len(oob) == 0 {
		return
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		r.err = fmt.Errorf("control data: %w", err)
		return
	}
	for i := range msgs {
		if msgs[i].Header.Level != syscall.SOL_SOCKET || msgs[i].Header.Type != syscall.SCM_RIGHTS {
			continue
		}
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			r.err = fmt.Errorf("control data: %w", err)
			continue
		}
		for _, fd := range fds {
			r.files = append(r.files, os.NewFile(uintptr(fd), "passed descriptor"))
		}
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

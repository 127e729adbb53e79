package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the largest frame body, in bytes.
const MaxFrame = 1 << 20

// HeaderSize is the big-endian uint32 length before each body.
const HeaderSize = 4

// ReadFrame reads one frame and returns its body. A length of 0 or over
// MaxFrame is a bad_frame error, returned before any of the body is read or
// allocated. A stream that ends between frames gives io.EOF; one that ends
// inside a frame gives io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return nil, WireError{Code: BadFrame, Detail: fmt.Sprintf("frame length %d", n)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// WriteFrame writes payload as one frame, in a single Write so that frames
// from concurrent writers on one connection never interleave.
func WriteFrame(w io.Writer, payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxFrame {
		return WireError{Code: BadFrame, Detail: fmt.Sprintf("frame length %d", len(payload))}
	}
	buf := make([]byte, HeaderSize+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[HeaderSize:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadEnvelope reads and decodes one frame.
func ReadEnvelope(r io.Reader) (Envelope, error) {
	payload, err := ReadFrame(r)
	if err != nil {
		return Envelope{}, err
	}
	return Decode(payload)
}

// WriteEnvelope encodes e and writes it as one frame.
func WriteEnvelope(w io.Writer, e Envelope) error {
	payload, err := Encode(e)
	if err != nil {
		return err
	}
	return WriteFrame(w, payload)
}

package egressd

import (
	"bytes"
	"io"
)

// streamRedactor writes a streamed body with the secret taken out. A read
// can end inside an echoed secret, so it holds back a tail that could
// begin one and decides on it with the next bytes: the secret never goes
// out whole, nor split across writes.
type streamRedactor struct {
	needles [][]byte
	longest int // the longest needle's length
	out     io.Writer
	pending []byte
}

func newStreamRedactor(s secret, out io.Writer) *streamRedactor {
	r := &streamRedactor{out: out}
	for _, n := range s.needles {
		r.needles = append(r.needles, []byte(n))
		r.longest = max(r.longest, len(n))
	}
	return r
}

// write passes p on, less what it must hold back.
func (r *streamRedactor) write(p []byte) error {
	if len(r.needles) == 0 {
		_, err := r.out.Write(p)
		return err
	}
	r.pending = append(r.pending, p...)
	for _, n := range r.needles {
		r.pending = bytes.ReplaceAll(r.pending, n, []byte(redacted))
	}
	hold := r.held()
	ready := r.pending[:len(r.pending)-hold]
	if len(ready) == 0 {
		return nil
	}
	_, err := r.out.Write(ready)
	r.pending = append(r.pending[:0], r.pending[len(ready):]...)
	return err
}

// held is how much of pending's end to hold back: of the line it ends in,
// the last bytes that a needle could begin in (its length less one). A
// needle holds no line break (it is a valid header value, JSON-escaped at
// most), so a whole line holds only whole ones, replaced already, and an
// SSE event goes out whole as it comes. The hold depends on where lines
// end, never on whether the tail begins the secret: a compromised sandbox
// can have a server echo what it sends, and a hold (or, at a cut, a drop)
// of a tail that begins the secret would tell it, by the chunk sizes or
// the length of a cut response, whether its guess does, and so the secret
// a byte at a time.
func (r *streamRedactor) held() int {
	line := len(r.pending) - (bytes.LastIndexByte(r.pending, '\n') + 1)
	return min(line, r.longest-1)
}

// close writes what was held back, unless the body was cut: then the tail
// may be the start of a secret whose end never came, and is dropped.
func (r *streamRedactor) close(cut bool) error {
	defer func() { r.pending = nil }()
	if cut || len(r.pending) == 0 {
		return nil
	}
	_, err := r.out.Write(r.pending)
	return err
}

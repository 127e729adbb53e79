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

// held is how much of pending's end to hold back: tailHold's bytes,
// which depend on where lines end, never on whether the tail begins the
// secret.
func (r *streamRedactor) held() int { return tailHold(r.pending, r.longest) }

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

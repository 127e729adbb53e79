package bxctl

import (
	"bytes"
	"io"
	"sync"
)

// keyReader sits between the terminal and x/term's line editor, which
// answers Ctrl-C and Ctrl-D with io.EOF and leaves the key in its buffer, so
// that every later ReadLine sees it again (and the owner's next keys land
// in the shell). keyReader turns each of the two keys into Enter and
// remembers which it was: the line editor then returns the line as usual,
// and the caller asks interrupted() whether the owner meant it.
//
// Each Read hands over bytes up to and including the first line end or
// either key, so a ReadLine returns at the end of the last chunk read and
// the key remembered belongs to the line it returned.
type keyReader struct {
	r io.Reader

	mu      sync.Mutex
	pending []byte // read from r, not yet handed over
	buf     [256]byte
	last    byte // ctrlC or ctrlD when the last chunk ended in one, else 0
}

const (
	ctrlC = 3
	ctrlD = 4
)

func newKeyReader(r io.Reader) *keyReader { return &keyReader{r: r} }

func (k *keyReader) Read(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) == 0 {
		k.mu.Unlock()
		n, err := k.r.Read(k.buf[:])
		k.mu.Lock()
		if n == 0 {
			return 0, err
		}
		k.pending = k.buf[:n]
	}
	chunk, key := k.pending, byte(0)
	if i := bytes.IndexAny(k.pending, "\r\x03\x04"); i >= 0 {
		chunk, key = k.pending[:i+1], k.pending[i]
	}
	n := copy(p, chunk)
	k.last = 0
	if n == len(chunk) && (key == ctrlC || key == ctrlD) {
		p[n-1] = '\r'
		k.last = key
	}
	k.pending = k.pending[n:]
	return n, nil
}

// interrupted reports which key ended the line just read: ctrlC, ctrlD, or
// 0 for Enter.
func (k *keyReader) interrupted() byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

// discard drops what was read but not handed over: keys typed before a
// question was asked must not answer it.
func (k *keyReader) discard() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending = nil
}

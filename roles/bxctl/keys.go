package bxctl

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// keyReader owns the terminal's input. One pump goroutine reads it and
// hands chunks over a channel, so that while a turn runs the chat can
// watch for Ctrl-C, and an approval prompt can wait for one key and for
// brokerd at once; between turns x/term's line editor reads it through Read.
//
// The line editor answers Ctrl-C and Ctrl-D with io.EOF and leaves the key
// in its buffer, so that every later ReadLine sees it again. Read turns
// each of the two keys into Enter and remembers which it was: the editor
// returns the line as usual, and the caller asks interrupted() whether the
// owner meant it. A bracketed paste that holds a line end becomes one
// message the same way (pasted()), rather than one turn per line.
//
// Each Read hands over bytes up to and including the first line end or
// either key, so a ReadLine returns at the end of the last chunk read and
// the key remembered belongs to the line it returned.
type keyReader struct {
	chunks chan keyChunk // closed when the terminal's input ends

	mu      sync.Mutex
	pending []byte // read from the terminal, not yet handed over
	last    byte   // ctrlC, ctrlD or pasteKey when the last chunk ended in one, else 0
	paste   string // the multi-line paste that ended the last line
}

// keyChunk is what one read of the terminal gave, and when: a prompt
// ignores keys read before it was on the screen.
type keyChunk struct {
	data []byte
	at   time.Time
}

const (
	ctrlC    = 3
	ctrlD    = 4
	pasteKey = 0x1f // not a key the owner can type alone: marks a paste
)

// The markers a terminal in bracketed-paste mode puts around a paste.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

func newKeyReader(r io.Reader) *keyReader {
	k := &keyReader{chunks: make(chan keyChunk, 64)}
	go k.pump(r)
	return k
}

// pump reads the terminal until it ends. It outlives the chat only when
// the chat returns while a read is blocked, and the process exits then.
func (k *keyReader) pump(r io.Reader) {
	defer close(k.chunks)
	for {
		buf := make([]byte, 256)
		n, err := r.Read(buf)
		if n > 0 {
			k.chunks <- keyChunk{data: buf[:n], at: time.Now()}
		}
		if err != nil {
			return
		}
	}
}

func (k *keyReader) Read(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.pending) == 0 || incompletePaste(k.pending) {
		k.mu.Unlock()
		c, ok := <-k.chunks
		k.mu.Lock()
		if !ok {
			if len(k.pending) == 0 {
				return 0, io.EOF
			}
			break
		}
		k.pending = append(k.pending, c.data...)
	}
	k.last, k.paste = 0, ""
	if bytes.HasPrefix(k.pending, pasteStart) {
		if n, ok := k.takePaste(p); ok {
			return n, nil
		}
	}
	chunk, key := k.pending, byte(0)
	if i := bytes.IndexAny(k.pending, "\r\x03\x04"); i >= 0 {
		chunk, key = k.pending[:i+1], k.pending[i]
	}
	if i := bytes.Index(chunk, pasteStart); i > 0 {
		chunk, key = chunk[:i], 0 // what came before a paste goes first
	}
	n := copy(p, chunk)
	if n == len(chunk) && (key == ctrlC || key == ctrlD) {
		p[n-1] = '\r'
		k.last = key
	}
	k.pending = k.pending[n:]
	return n, nil
}

// takePaste handles the paste at the start of pending. One without a line
// end goes to the editor as typed text, its control bytes dropped (a
// pasted Ctrl-C or escape is not the owner pressing it). One with a line
// end is kept whole for pasted() and ends the line.
func (k *keyReader) takePaste(p []byte) (int, bool) {
	body, rest, ok := bytes.Cut(k.pending[len(pasteStart):], pasteEnd)
	if !ok {
		body, rest = k.pending[len(pasteStart):], nil // the input ended inside it
	}
	text := bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	text = bytes.ReplaceAll(text, []byte("\r"), []byte("\n"))
	if bytes.IndexByte(text, '\n') < 0 {
		k.pending = append(typedText(text), rest...)
		return 0, false
	}
	k.paste, k.last = string(text), pasteKey
	k.pending = rest
	p[0] = '\r'
	return 1, true
}

// typedText is b without control bytes other than tab.
func typedText(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c != 0x7f || c == '\t' {
			out = append(out, c)
		}
	}
	return out
}

// incompletePaste reports whether b starts a paste (or could, given more
// bytes) whose end marker has not come yet.
func incompletePaste(b []byte) bool {
	if len(b) < len(pasteStart) {
		return bytes.HasPrefix(pasteStart, b) && len(b) > 1
	}
	return bytes.HasPrefix(b, pasteStart) && !bytes.Contains(b, pasteEnd)
}

// interrupted reports which key ended the line just read: ctrlC, ctrlD,
// pasteKey for a multi-line paste, or 0 for Enter.
func (k *keyReader) interrupted() byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

// pasted is the multi-line paste that ended the line just read.
func (k *keyReader) pasted() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.paste
}

// discard drops what was read but not handed over, and what the pump has
// read since: keys typed before a question was asked must not answer it.
func (k *keyReader) discard() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending = nil
	for {
		select {
		case _, ok := <-k.chunks:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// keep puts bytes back for the line editor: what the owner typed while a
// turn ran is there at the next prompt.
func (k *keyReader) keep(b []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending = append(k.pending, b...)
}

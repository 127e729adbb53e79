package supervise

import (
	"bytes"
	"io"
	"sync"
)

// prefixWriter writes each complete line it is given to out with a prefix,
// so that interleaved daemons stay readable. Partial lines wait for their end.
type prefixWriter struct {
	mu     *sync.Mutex // shared by every role's writers: one line at a time
	out    io.Writer
	prefix []byte
	buf    []byte
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte(nil), w.prefix...), w.buf[:i+1]...)
		if _, err := w.out.Write(line); err != nil {
			return len(p), err
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a runaway line: flush it rather than grow without bound
		w.out.Write(append(append(append([]byte(nil), w.prefix...), w.buf...), '\n'))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

package supervise

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"boxmaker/roles/internal/termtext"
)

// lineLog is up's log. Every line, up's own and each role's, is written
// whole, one at a time, as "TIME NAME: TEXT": a timestamp, because up.log is
// read after the fact (what died when); one name, because several daemons
// share the file; and the text through termtext.Line, because a role's log
// may quote what a peer or the model sent, and up's log is often a terminal.
type lineLog struct {
	mu  sync.Mutex
	out io.Writer
	now func() time.Time
}

// timeLayout is RFC 3339 in local time, to the millisecond: what an owner
// compares with the clock on the wall, and what sorts.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// maxLine is where a line that never ends is cut, rather than let a role
// grow up's memory without bound.
const maxLine = 64 << 10

// line writes text, one line without its newline, under name. A write error
// is dropped: a full disk under up.log must not stop the roles.
func (l *lineLog) line(name string, text []byte) {
	text = bytes.TrimSuffix(text, []byte("\r"))
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "%s %s: %s\n", l.now().Format(timeLayout), name, termtext.Line(string(text)))
}

// lines writes each line of text under name.
func (l *lineLog) lines(name, text string) {
	for line := range bytes.Lines([]byte(text)) {
		l.line(name, bytes.TrimSuffix(line, []byte("\n")))
	}
}

// roleWriter turns one run of a role's output into lines of the log.
type roleWriter struct {
	log  *lineLog
	name string
	mu   sync.Mutex
	buf  []byte
	last string // the last line the role wrote: the likely reason it died
}

func newRoleWriter(log *lineLog, name string) *roleWriter {
	return &roleWriter{log: log, name: name}
}

func (w *roleWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.emit(w.buf)
		w.buf = nil
	}
	return len(p), nil
}

// flush writes a last line the role never ended (it exited mid-line), once
// its output is closed.
func (w *roleWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

// lastLine is the last line the role wrote, cleaned and cut for a status
// line.
func (w *roleWriter) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *roleWriter) emit(line []byte) {
	// A role names itself in its own lines, since it also runs alone (under
	// systemd, by hand); up names it already.
	line = bytes.TrimPrefix(line, []byte(w.name+": "))
	if len(bytes.TrimSpace(line)) > 0 {
		w.last = termtext.Line(string(line[:min(len(line), 300)]))
	}
	w.log.line(w.name, line)
}

// LineWriter returns a writer that logs each line written to it under name
// as Run logs a role's (a leading "name: " dropped, a timestamp added): for
// up's own lines before and beside Run's, into the same log.
func LineWriter(out io.Writer, name string) io.Writer {
	return newRoleWriter(&lineLog{out: out, now: time.Now}, name)
}

package mcpclient

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"

	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"
)

// maxNotices bounds the notices one response carries; more are counted in
// the log, not sent.
const maxNotices = 32

func (f *frames) begin(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notices > maxNotices {
		f.diag.line(fmt.Sprintf("left out %d of the server's notifications", f.notices-maxNotices))
	}
	f.id, f.notices = id, 0
}

func (f *frames) end() {}

// notice sends one notification as a line: within the open response, or,
// between responses, at once under the last response's id (never final),
// which brokerd's reader takes as a notice. At most maxNotices go out per
// response; the rest are counted in the log.
func (f *frames) notice(t wire.McpNoticeType, text string) {
	line := Cut1(sanitize(text), wire.MaxMcpNotice)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notices++; f.notices <= maxNotices {
		f.writeLocked(false, wire.McpNotice{Type: t, Text: wire.McpLine(line)})
	}
}

// send writes the final frame of the open response.
func (f *frames) send(m wire.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeLocked(true, m)
	return f.writeErr
}

// sendResult sends a result, cutting its text further while the frame is
// over wire.MaxFrame (canonical JSON writes a control character as six
// bytes).
func (f *frames) sendResult(text string, isError, truncated bool) error {
	for {
		m := wire.McpToolResult{Text: wire.McpText(text), IsError: isError, Truncated: truncated}
		b, err := wire.Encode(wire.Envelope{ID: f.id, Final: true, Msg: m})
		if err == nil && len(b) <= wire.MaxFrame {
			return f.send(m)
		}
		text, truncated = Cut1(text, len(text)/2), true
	}
}

func (f *frames) writeLocked(final bool, m wire.Message) {
	if f.writeErr != nil {
		return
	}
	f.writeErr = wire.WriteEnvelope(f.out, wire.Envelope{ID: f.id, Final: final, Msg: m})
}

// sanitize shows every control, bidi and invisible character escaped
// (\x1b, \u202e): nothing a server wrote may steer the terminal that reads
// brokerd's log, or end its line.
func sanitize(s string) string { return termtext.Line(s) }

// lines writes sanitized, bounded lines to the diagnostics, at most
// linesPerSecond a second; the rest are dropped.
type lines struct {
	mu      sync.Mutex
	w       io.Writer
	window  time.Time
	inWin   int
	dropped int
}

const linesPerSecond = 20

func newLines(w io.Writer) *lines { return &lines{w: w} }

func (l *lines) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.window) >= time.Second {
		if l.dropped > 0 {
			fmt.Fprintf(l.w, "mcp: dropped %d lines\n", l.dropped)
		}
		l.window, l.inWin, l.dropped = now, 0, 0
	}
	if l.inWin++; l.inWin > linesPerSecond {
		l.dropped++
		return
	}
	fmt.Fprintf(l.w, "mcp: %s\n", Cut1(sanitize(s), wire.MaxMcpNotice))
}

// writer is an io.Writer (a child's stderr) whose lines go to l, each
// cut at wire.MaxMcpNotice, with prefix.
func (l *lines) writer(prefix string) io.Writer {
	r, w := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, wire.MaxMcpNotice)
		for {
			chunk, isPrefix, err := br.ReadLine()
			if len(chunk) > 0 {
				l.line(prefix + string(chunk))
			}
			for isPrefix && err == nil { // the rest of an overlong line is dropped
				_, isPrefix, err = br.ReadLine()
			}
			if err != nil {
				r.CloseWithError(err)
				return
			}
		}
	}()
	return w
}

package egressd

import (
	"fmt"
	"log"
	"strings"
	"sync"
	"time"
)

// A channel's log lines are rate limited: the sandbox, not brokerd, decides
// how many connections it makes, and a compromised one could make egressd
// write a line per descriptor (refused, or a request it garbled) as fast
// as it can send them, filling up's log and the disk under it.
const (
	mcpLogBurst    = 32          // lines a channel may log at once
	mcpLogInterval = time.Second // and then one per interval
	// mcpLogLine cuts a line, as brokerd cuts an MCP server's notice: a
	// line quotes the sandbox's method or request line, which only the
	// request head's 64 KiB bounds.
	mcpLogLine = 4 << 10
)

// lineLimiter passes a burst of lines, then one per interval; the next line
// it passes says how many it dropped.
type lineLimiter struct {
	log     *log.Logger
	now     func() time.Time
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

func newLineLimiter(l *log.Logger) *lineLimiter {
	return &lineLimiter{log: l, now: time.Now, tokens: mcpLogBurst}
}

// print logs line unless the channel has logged too much of late.
func (l *lineLimiter) print(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(mcpLogBurst, l.tokens+float64(now.Sub(l.last))/float64(mcpLogInterval))
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return
	}
	l.tokens--
	if l.dropped > 0 {
		line = fmt.Sprintf("%s (and %d lines of this channel dropped before it: too many)", line, l.dropped)
		l.dropped = 0
	}
	if len(line) > mcpLogLine {
		line = strings.ToValidUTF8(line[:mcpLogLine], "") + " [cut]"
	}
	l.log.Print(line)
}

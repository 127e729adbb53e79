package audit

import (
	"encoding/binary"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// entry is what the chain checks read from one line.
type entry struct {
	seq      uint64
	time     wire.Timestamp
	prev     wire.Hash32
	recovery bool
	torn     wire.Recovery // set when recovery is
}

// parseEntry decodes one line strictly. The verifier reads every line of the
// log, and wire's general decoder costs 10 to 40 µs a line, some forty times
// the fast path (BenchmarkParseLine), so lines in the exact canonical form the
// writer produces take a hand-written path first; any other line, valid or
// not, goes to wire.DecodeAuditEntry, which has the last word on what is
// valid and gives the error.
//
// WARNING: the fast path must never accept a line that wire.DecodeAuditEntry
// rejects, or read different values from it. FuzzCanonicalMatchesWire and
// TestCanonicalAcceptsEncoderOutput prove it; rerun the fuzz target after any
// change to wire's audit types or strictness rules.
func parseEntry(line []byte) (entry, error) {
	if e, ok := parseCanonical(line); ok {
		return e, nil
	}
	return decodeStrict(line)
}

func decodeStrict(line []byte) (entry, error) {
	ae, err := wire.DecodeAuditEntry(line)
	if err != nil {
		return entry{}, err
	}
	seq, ts, prev := ae.Chain()
	e := entry{seq: seq, time: ts, prev: prev}
	if r, ok := ae.(wire.RecoveryRecord); ok {
		e.recovery, e.torn = true, r.Recovery
	}
	return e, nil
}

// parseCanonical reads a line byte for byte in the canonical layout: members
// in declared order, no whitespace, strings with only canonical escapes.
// ok is false for anything else.
func parseCanonical(line []byte) (e entry, ok bool) {
	c := cursor{b: line}
	c.lit(`{"seq":`)
	e.seq = c.uint()
	c.lit(`,"time":`)
	e.time = c.timestamp()
	c.lit(`,"prev":`)
	e.prev = c.hash()
	if c.take(`,"recovery":{"torn_bytes":`) {
		e.recovery = true
		e.torn.TornBytes = c.uint()
		c.lit(`,"torn_sha256":`)
		e.torn.TornSHA256 = c.hash()
		c.lit(`}}`)
		return e, c.done()
	}
	c.lit(`,"session":`)
	c.sessionID()
	c.lit(`,"call":`)
	c.uint()
	c.lit(`,"tool":`)
	c.str()
	c.lit(`,"arguments":`)
	c.str()
	c.lit(`,"session_taint":`)
	c.oneOf(`"public"`, `"private"`, `"secret"`)
	c.lit(`,"decision":{"outcome":`)
	c.decision()
	c.lit(`}}`)
	return e, c.done()
}

// cursor walks a line; once bad is set every method is a no-op, so a parse
// reads as a straight list of expectations checked once at the end.
type cursor struct {
	b   []byte
	i   int
	bad bool
}

func (c *cursor) done() bool { return !c.bad && c.i == len(c.b) }

// take consumes s if the line continues with it and reports whether it did.
func (c *cursor) take(s string) bool {
	if c.bad || len(c.b)-c.i < len(s) || string(c.b[c.i:c.i+len(s)]) != s {
		return false
	}
	c.i += len(s)
	return true
}

func (c *cursor) lit(s string) {
	if !c.take(s) {
		c.bad = true
	}
}

func (c *cursor) oneOf(words ...string) {
	for _, w := range words {
		if c.take(w) {
			return
		}
	}
	c.bad = true
}

// decision reads the union's members after its tag name; the tag is first.
func (c *cursor) decision() {
	switch {
	case c.take(`"allowed","grant":`):
		c.str()
	case c.take(`"approved","grant":`):
		c.str()
		c.lit(`,"approver":`)
		c.str()
		c.lit(`,"post":`)
		c.nullOrStr()
	case c.take(`"denied","reason":`):
		c.oneOf(`"no_grant"`, `"grant_expired"`, `"taint_too_high"`,
			`"denied_by_grant"`, `"approval_refused"`, `"approval_expired"`, `"untrusted_session"`, `"unknown_handle"`,
			`"unpinned_tool"`)
		c.lit(`,"grant":`)
		c.nullOrStr()
	default:
		c.bad = true
	}
}

// uint reads a JSON integer that fits in a uint64: no sign, no leading zero.
func (c *cursor) uint() uint64 {
	if c.bad {
		return 0
	}
	start := c.i
	var n uint64
	for c.i < len(c.b) && '0' <= c.b[c.i] && c.b[c.i] <= '9' {
		d := uint64(c.b[c.i] - '0')
		if n > (1<<64-1-d)/10 {
			c.bad = true
			return 0
		}
		n = n*10 + d
		c.i++
	}
	if c.i == start || c.b[start] == '0' && c.i-start > 1 {
		c.bad = true
	}
	return n
}

var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

// hash reads a quoted Hash32: exactly 64 lowercase hex digits.
func (c *cursor) hash() (h wire.Hash32) {
	if c.bad || len(c.b)-c.i < 66 || c.b[c.i] != '"' || c.b[c.i+65] != '"' {
		c.bad = true
		return h
	}
	hexd := c.b[c.i+1 : c.i+65]
	for k := range h {
		hi, lo := hexValue[hexd[2*k]], hexValue[hexd[2*k+1]]
		if hi > 15 || lo > 15 {
			c.bad = true
			return h
		}
		h[k] = hi<<4 | lo
	}
	c.i += 66
	return h
}

// sessionID reads a quoted SessionID: 1 to 64 of [a-z0-9-], no escapes.
func (c *cursor) sessionID() {
	if !c.take(`"`) {
		c.bad = true
		return
	}
	start := c.i
	for c.i < len(c.b) && c.i-start <= wire.MaxSessionID {
		ch := c.b[c.i]
		if 'a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' || ch == '-' {
			c.i++
			continue
		}
		break
	}
	if n := c.i - start; n == 0 || n > wire.MaxSessionID {
		c.bad = true
	}
	c.lit(`"`)
}

func (c *cursor) nullOrStr() {
	if !c.take("null") {
		c.str()
	}
}

// str reads a quoted string: raw bytes from 0x20 up except '"' and '\\',
// valid UTF-8, and only the escapes the canonical encoder writes.
func (c *cursor) str() {
	if c.bad || c.i >= len(c.b) || c.b[c.i] != '"' {
		c.bad = true
		return
	}
	start := c.i + 1
	var high uint64 // any byte with its top bit set, so the string is not ASCII
	for i := start; ; {
		i, high = skipPlain(c.b, i, high)
		if i >= len(c.b) {
			c.bad = true
			return
		}
		switch ch := c.b[i]; {
		case ch == '"':
			if high&0x80 != 0 && !utf8.Valid(c.b[start:i]) {
				c.bad = true
				return
			}
			c.i = i + 1
			return
		case ch == '\\':
			n := escapeLen(c.b[i:])
			if n == 0 {
				c.bad = true
				return
			}
			i += n
		case ch < 0x20:
			c.bad = true
			return
		default:
			high |= uint64(ch)
			i++
		}
	}
}

// skipPlain steps over b from i, eight bytes at a time, while none of them is
// '"', '\\' or a control character, and returns where it stopped, with the
// bytes it passed ORed into high. This is the verifier's hottest loop.
func skipPlain(b []byte, i int, high uint64) (int, uint64) {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		quote, slash := x^('"'*ones), x^('\\'*ones)
		// (v - ones) &^ v & tops is non-zero exactly when a byte of v is zero;
		// with 0x20*ones, when a byte of x is below 0x20.
		special := (quote-ones)&^quote | (slash-ones)&^slash | (x-0x20*ones)&^x
		if special&tops != 0 {
			break
		}
		high |= x & tops
	}
	if high != 0 {
		high = 0x80
	}
	return i, high
}

// escapeLen is the length of the canonical escape at the start of b, or 0.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(b) >= 6 && b[2] == '0' && b[3] == '0' && (b[4] == '0' || b[4] == '1') && hexValue[b[5]] < 16 {
			return 6
		}
	}
	return 0
}

var monthDays = [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// timestamp reads a quoted "YYYY-MM-DDTHH:MM:SS.mmmZ" with a date that exists,
// from 1970 on, as wire.ParseTimestamp accepts it.
func (c *cursor) timestamp() wire.Timestamp {
	if c.bad || len(c.b)-c.i < 26 || c.b[c.i] != '"' || c.b[c.i+25] != '"' {
		c.bad = true
		return 0
	}
	s := c.b[c.i+1 : c.i+25]
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		c.bad = true
		return 0
	}
	y, mo, d := digits(s[0:4]), digits(s[5:7]), digits(s[8:10])
	h, mi, sec, ms := digits(s[11:13]), digits(s[14:16]), digits(s[17:19]), digits(s[20:23])
	if min(y, mo, d, h, mi, sec, ms) < 0 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		c.bad = true
		return 0
	}
	c.i += 26
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ms*int(time.Millisecond), time.UTC)
	return wire.Timestamp(t.UnixMilli())
}

func daysIn(y, m int) int {
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		return 29
	}
	return monthDays[m]
}

// digits reads b as a decimal number, or -1 if any byte is not a digit.
func digits(b []byte) int {
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return -1
		}
		n = n*10 + int(ch-'0')
	}
	return n
}

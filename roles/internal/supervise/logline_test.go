package supervise

import (
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/syncbuf"
)

// TestLogLines: each line in up.log has one timestamp and one name, even
// when the role names itself; a role's text is shown as text, never acted
// on by the terminal; a line the role never ended is written when its
// output closes.
func TestLogLines(t *testing.T) {
	var out syncbuf.Buffer
	clock := time.Date(2026, 12, 1, 18, 2, 3, 4e6, time.FixedZone("", 3600))
	log := &lineLog{out: &out, now: func() time.Time { return clock }}
	w := newRoleWriter(log, "brokerd")
	w.Write([]byte("brokerd: listening\nhalf a "))
	w.Write([]byte("line\r\nquoted: \x1b]0;PWNED\x07 \u202etxt.exe\tend\n"))
	w.Write([]byte("brokerd: brokerd: named twice by the text itself\nno newline"))
	w.flush()
	log.lines("up", "two\nlines")
	want := "2026-12-01T18:02:03.004+01:00 brokerd: listening\n" +
		"2026-12-01T18:02:03.004+01:00 brokerd: half a line\n" +
		`2026-12-01T18:02:03.004+01:00 brokerd: quoted: \x1b]0;PWNED\x07 \u202etxt.exe\tend` + "\n" +
		"2026-12-01T18:02:03.004+01:00 brokerd: brokerd: named twice by the text itself\n" +
		"2026-12-01T18:02:03.004+01:00 brokerd: no newline\n" +
		"2026-12-01T18:02:03.004+01:00 up: two\n" +
		"2026-12-01T18:02:03.004+01:00 up: lines\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if w.lastLine() != "no newline" {
		t.Errorf("last line %q", w.lastLine())
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("an escape reached the log")
	}
}

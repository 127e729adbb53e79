package bxctl

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"boxmaker/wire"
)

func TestMentionedHandles(t *testing.T) {
	got := mentionedHandles("see handle:h2 and handle:h10, again handle:h2; not handle:h0, handle:h01 or handle:hx")
	if want := []string{"h2", "h10"}; !slices.Equal(got, want) {
		t.Errorf("mentions %v, want %v", got, want)
	}
	many := strings.Repeat("handle:h1 ", 3)
	for i := 2; i < 30; i++ {
		many += "handle:h" + string(rune('0'+i%10)) + string(rune('0'+i/10+1)) + " "
	}
	if n := len(mentionedHandles(many)); n != maxShownHandles {
		t.Errorf("%d handles shown, want at most %d", n, maxShownHandles)
	}
}

// A handle's content came from a tool: it reaches the terminal sanitized,
// under a label line.
func TestWriteHandleSanitizes(t *testing.T) {
	var out bytes.Buffer
	writeHandle(&out, wire.HandleRef{Handle: "h3", Tool: "http_fetch", Class: wire.Public, Untrusted: true, Bytes: 12}, "page\x1b[2J\u202e")
	got := out.String()
	if strings.Contains(got, "\x1b") || strings.Contains(got, "\u202e") {
		t.Errorf("an escape reached the terminal: %q", got)
	}
	if want := "[handle h3: public, untrusted, 12 bytes from http_fetch]\npage\\x1b[2J\\u202e\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestHandlesUsage(t *testing.T) {
	for _, args := range [][]string{
		{"handles"},
		{"handles", "show"},
		{"handles", "show", "s1"},
		{"handles", "show", "S 1", "h1"},
		{"handles", "show", "s1", "handle:h1"},
		{"handles", "show", "s1", "h1", "h2"},
	} {
		if code, out, errOut := run(t, append(args, "--home", t.TempDir())...); code != 2 {
			t.Errorf("%v: status %d, want 2\n%s%s", args, code, out, errOut)
		}
	}
}

func TestGrantsCheckSaysWhatBecomesOfResults(t *testing.T) {
	code, out, errOut := run(t, "grants", "check", "../../fixtures/policy/handle-grants")
	if code != 0 {
		t.Fatalf("status %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`notes-secret +notes_read +auto +secret +secret\(handle\) +false`, `inspect-declassify +inspect +auto +secret +public\(declassify\) +true`, `fetch-public +http_fetch +auto +private +public +true`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("grants check lacks %q:\n%s", want, out)
		}
	}
}

// In the terminal a handle's label is dim, which a reply's sanitized text
// cannot be: a label the model wrote into its reply shows plain.
func TestTerminalHandleLabelIsDim(t *testing.T) {
	v, out := screenOf()
	v.handle(wire.HandleRef{Handle: "h1", Tool: "notes_read", Class: wire.Secret, Bytes: 4}, "1234")
	if want := dim + "[handle h1: secret, trusted, 4 bytes from notes_read]" + reset + "\r\n1234\r\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

package termtext

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanAndLine(t *testing.T) {
	cases := []struct {
		name, in, clean, line string
	}{
		{"plain", "hello, world", "hello, world", "hello, world"},
		{"empty", "", "", ""},
		{"newline and tab", "a\n\tb", "a\n\tb", `a\n\tb`},
		{"CR that would overwrite the line", "ok\rrm -rf /", `ok\x0drm -rf /`, `ok\x0drm -rf /`},
		{"erase screen", "\x1b[2J", `\x1b[2J`, `\x1b[2J`},
		{"scroll region", "\x1b[6;7r", `\x1b[6;7r`, `\x1b[6;7r`},
		{"OSC 52 clipboard write", "\x1b]52;c;cm0gLXJm\a", `\x1b]52;c;cm0gLXJm\x07`, `\x1b]52;c;cm0gLXJm\x07`},
		{"OSC 8 hyperlink", "\x1b]8;;https://evil\x1b\\x\x1b]8;;\x1b\\", `\x1b]8;;https://evil\x1b\x\x1b]8;;\x1b\`, `\x1b]8;;https://evil\x1b\x\x1b]8;;\x1b\`},
		{"backspace and NUL", "a\bb\x00", `a\x08b\x00`, `a\x08b\x00`},
		{"DEL", "a\x7f", `a\x7f`, `a\x7f`},
		{"C1 CSI", "\u009b2J", `\u009b2J`, `\u009b2J`},
		{"NEL", "a\u0085b", `a\u0085b`, `a\u0085b`},
		{"bidi override (Trojan Source)", "if x \u202e} \u2066", `if x \u202e} \u2066`, `if x \u202e} \u2066`},
		{"isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`, `\u2066\u2067\u2068\u2069`},
		{"marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
		{"zero width", "a\u200bb\u200cc\u200dd\u2060e\ufeff", `a\u200bb\u200cc\u200dd\u2060e\ufeff`, `a\u200bb\u200cc\u200dd\u2060e\ufeff`},
		{"soft hyphen", "pass\u00adword", `pass\u00adword`, `pass\u00adword`},
		{"tag characters", "hi\U000e0001\U000e0041\U000e007f", `hi\U000e0001\U000e0041\U000e007f`, `hi\U000e0001\U000e0041\U000e007f`},
		{"variation selector supplement", "a\U000e0100", `a\U000e0100`, `a\U000e0100`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`, `a\u2028b\u2029`},
		{"invisible fillers", "\u115f\u1160\u3164\uffa0", `\u115f\u1160\u3164\uffa0`, `\u115f\u1160\u3164\uffa0`},
		{"not UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"truncated sequence", "\xe2\x80", `\xe2\x80`, `\xe2\x80`},
		{"encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`, `\xed\xa0\x80`},
		{"U+FFFD itself stays", "\ufffd", "\ufffd", "\ufffd"},
		{"letters of any script", "Grüße, ありがとう, مرحبا, שלום, Привет", "Grüße, ありがとう, مرحبا, שלום, Привет", "Grüße, ありがとう, مرحبا, שלום, Привет"},
		{"emoji and their selector", "ok 👍 ❤\ufe0f", `ok 👍 ❤\ufe0f`, `ok 👍 ❤\ufe0f`},
		{"combining grapheme joiner", "to\u034fdo.md", `to\u034fdo.md`, `to\u034fdo.md`},
		{"variation selectors 1 to 16", "a\ufe00b\ufe0e", `a\ufe00b\ufe0e`, `a\ufe00b\ufe0e`},
		{"Khmer inherent vowels", "x\u17b4\u17b5", `x\u17b4\u17b5`, `x\u17b4\u17b5`},
		{"Mongolian selectors and vowel separator", "\u180b\u180c\u180d\u180e\u180f", `\u180b\u180c\u180d\u180e\u180f`, `\u180b\u180c\u180d\u180e\u180f`},
		{"unassigned default ignorables", "\u2065\ufff0\U000e0fff", `\u2065\ufff0\U000e0fff`, `\u2065\ufff0\U000e0fff`},
		{"combining marks", "e\u0301 a\u0308", "e\u0301 a\u0308", "e\u0301 a\u0308"},
		{"backslash stays", `C:\dir \x1b`, `C:\dir \x1b`, `C:\dir \x1b`},
		{"non-breaking space stays", "a\u00a0b", "a\u00a0b", "a\u00a0b"},
		{"painted approval", "done\x1b[2J\x1b[Happrove? [y/N]", `done\x1b[2J\x1b[Happrove? [y/N]`, `done\x1b[2J\x1b[Happrove? [y/N]`},
	}
	for _, c := range cases {
		if got := Clean(c.in); got != c.clean {
			t.Errorf("%s: Clean(%q) = %q, want %q", c.name, c.in, got, c.clean)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("%s: Line(%q) = %q, want %q", c.name, c.in, got, c.line)
		}
	}
}

// safeByDefinition is Safe written out from the rule, without shortcuts.
func safeByDefinition(r rune) bool {
	switch {
	case r < 0 || r > utf8.MaxRune || r >= 0xd800 && r <= 0xdfff:
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return false
	case r >= 0xe0000 && r <= 0xeffff:
		return false
	case DefaultIgnorable(r), unicode.Is(unicode.Variation_Selector, r):
		return false
	}
	return true
}

// TestSafeEveryCodePoint holds Safe's shortcuts to the rule, for every
// code point of the Unicode tables Go was built with.
func TestSafeEveryCodePoint(t *testing.T) {
	for r := rune(-1); r <= utf8.MaxRune+1; r++ {
		if Safe(r) != safeByDefinition(r) {
			t.Errorf("Safe(%U) = %v", r, Safe(r))
		}
	}
}

func TestNothingToEscapeAllocatesNothing(t *testing.T) {
	for _, s := range []string{"plain ascii text\nwith lines\tand tabs", "Grüße ありがとう 👍"} {
		if n := testing.AllocsPerRun(100, func() { _ = Clean(s) }); n != 0 {
			t.Errorf("Clean(%q): %v allocations", s, n)
		}
		if got := Clean(s); got != s {
			t.Errorf("Clean(%q) = %q", s, got)
		}
	}
}

// unescape reads Line's output back, for inputs without a backslash: the
// escapes show exactly what was there.
func unescape(t *testing.T, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i+1]]
		switch {
		case s[i+1] == 'n':
			b.WriteByte('\n')
		case s[i+1] == 't':
			b.WriteByte('\t')
		case digits > 0:
			v, err := strconv.ParseUint(s[i+2:i+2+digits], 16, 32)
			if err != nil {
				t.Fatalf("bad escape in %q: %v", s, err)
			}
			if digits == 2 {
				b.WriteByte(byte(v)) // a C0 control, DEL or a byte that is not UTF-8
			} else {
				b.WriteRune(rune(v))
			}
			i += digits
		default:
			t.Fatalf("unknown escape in %q", s)
		}
		i += 2
	}
	return b.String()
}

// FuzzClean: whatever the input, Clean's and Line's output is UTF-8 and
// holds nothing a terminal acts on or a reader cannot see; the escapes
// read back to the input; and cleaning twice changes nothing.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb\tc", "\x1b[2J\x1b[6;7r", "\u009b31m", "\u202eevil\u2066", "\xff\xfe",
		"\U000e0041\u200d\u00ad", "👨\u200d👩\u200d👧", "\xe2\x80", "\\x1b", "\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []struct {
			name, text string
			keeps      bool // newline and tab may stay
		}{{"Clean", Clean(s), true}, {"Line", Line(s), false}} {
			if !utf8.ValidString(out.text) {
				t.Fatalf("%s(%q) = %q is not UTF-8", out.name, s, out.text)
			}
			for _, r := range out.text {
				if !Safe(r) && !(out.keeps && (r == '\n' || r == '\t')) {
					t.Fatalf("%s(%q) = %q holds %U", out.name, s, out.text, r)
				}
				if r == 0x1b || r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e ||
					r >= 0x2066 && r <= 0x2069 || r >= 0x200b && r <= 0x200f || r == 0x2060 || r == 0xfeff || r == 0x061c {
					t.Fatalf("%s(%q) = %q holds %U", out.name, s, out.text, r)
				}
			}
		}
		if Clean(Clean(s)) != Clean(s) || Line(Line(s)) != Line(s) || Line(Clean(s)) != Line(s) {
			t.Fatalf("%q: cleaning twice changes the text", s)
		}
		if !strings.Contains(s, `\`) {
			if got := unescape(t, Line(s)); got != s {
				t.Fatalf("Line(%q) = %q reads back as %q", s, Line(s), got)
			}
		}
	})
}

var benchText = strings.Repeat("The model says: all 3 tests pass; see notes/todo.md.\n\tNext: git log --oneline.\n", 16)

// BenchmarkCleanNothingToEscape is the common case: no allocation.
func BenchmarkCleanNothingToEscape(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Clean(benchText)
	}
}

func BenchmarkCleanNonASCII(b *testing.B) {
	s := strings.Repeat("Grüße, ありがとう, مرحبا, Привет 👍 ", 32)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Clean(s)
	}
}

func BenchmarkCleanEscapes(b *testing.B) {
	s := benchText + "\x1b[2J\u202e"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Clean(s)
	}
}

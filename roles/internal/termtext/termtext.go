package termtext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s with every character that is not Safe shown escaped,
// except newline and tab, which multi-line text keeps. It returns s itself,
// without allocating, when nothing needs escaping.
func Clean(s string) string { return clean(s, false) }

// Line is Clean for a one-line field (a subject, a tool argument, a log
// line): newline and tab are escaped too, as \n and \t.
func Line(s string) string { return clean(s, true) }

// Safe reports whether r may be written to a terminal as it is: it is no
// C0 control (newline and tab included), DEL, C1 control, format character
// (Unicode category Cf), line or paragraph separator, plane 14 code point
// (tags, variation selectors 17 to 256), variation selector, or other
// Default_Ignorable_Code_Point (U+034F, the Khmer inherent vowels U+17B4
// and U+17B5, the Mongolian selectors, the Hangul fillers, ...).
func Safe(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return false
	case r < 0x7f:
		return true
	case r < 0xa0: // C1
		return false
	case r < 0x600: // below U+0600, only the soft hyphen (Cf) and the combining grapheme joiner are invisible
		return r != 0xad && r != 0x34f
	case r == 0x2028 || r == 0x2029:
		return false
	case r >= 0xe0000 && r <= 0xeffff:
		return false
	case r > utf8.MaxRune || r >= 0xd800 && r <= 0xdfff:
		return false
	}
	return !unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// clean returns s when every character may stay; otherwise it copies s,
// escaping, from the first one that may not.
func clean(s string, line bool) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f || !line && (c == '\n' || c == '\t') {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return escape(s, i, line)
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 1 || !Safe(r) { // n == 1: not UTF-8
			return escape(s, i, line)
		}
		i += n
	}
	return s
}

const hexDigits = "0123456789abcdef"

// escape copies s[:start] and escapes what follows.
func escape(s string, start int, line bool) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:start])
	for i := start; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case n == 1 && r == utf8.RuneError:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case r == '\n' && !line, r == '\t' && !line:
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case Safe(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			writeHex(&b, `\x`, uint32(r), 2)
		case r <= 0xffff:
			writeHex(&b, `\u`, uint32(r), 4)
		default:
			writeHex(&b, `\U`, uint32(r), 8)
		}
		i += n
	}
	return b.String()
}

// writeHex writes prefix and v as digits lowercase hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[v>>shift&0xf])
	}
}

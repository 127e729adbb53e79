package policy

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Shell patterns see the whole command (DESIGN.md section 11). /bin/sh runs
// every line of a command, so `.` matches newline; and a command holding a
// control character (C0 with tab, DEL, C1) matches an allowing pattern only
// where the pattern names that character itself, never through `.` or a
// class such as \s or [^;]. A deny pattern matches generously: `.` matches
// newline and classes reach control characters, since there a match refuses.

// compilePattern checks patterns entry n (counted from 1) and compiles the
// forms a grant of mode needs. The entry is compiled alone first: a valid
// RE2 expression has balanced groups, so wrapping it in ^(?:...)$ cannot let
// an alternative escape the anchors. An unterminated \Q would swallow the
// wrapper, so the wrapped form is checked too.
func compilePattern(n int, p string, mode Mode) (compiledPattern, error) {
	if _, err := regexp.Compile(p); err != nil {
		return compiledPattern{}, fmt.Errorf("pattern %d is not a valid RE2 expression: %v", n, err)
	}
	if _, err := regexp.Compile(`^(?:` + p + `)$`); err != nil {
		return compiledPattern{}, fmt.Errorf("pattern %d is not a valid RE2 expression once anchored (an unterminated \\Q?): %v", n, err)
	}
	loose, err := regexp.Compile(`^(?s:` + p + `)$`)
	if err != nil {
		return compiledPattern{}, fmt.Errorf("pattern %d cannot be compiled with . matching newline: %v", n, err)
	}
	cp := compiledPattern{raw: p, loose: loose}
	if mode != Deny {
		if cp.named, err = compileNamedOnly(p); err != nil {
			return compiledPattern{}, fmt.Errorf("pattern %d cannot be confined to the control characters it names: %v", n, err)
		}
	}
	return cp, nil
}

// compiledPattern is one patterns entry. loose is the entry anchored, with
// `.` matching newline: a deny grant decides by it, an allowing grant only
// explains with it. named (allowing grants only) decides for an allowing
// grant: it reaches a control character only where the entry names it.
type compiledPattern struct {
	raw   string
	loose *regexp.Regexp
	named *regexp.Regexp
}

// compileNamedOnly compiles p, anchored, so that `.` matches any character
// but a control character (newline included), and a class reaches a control
// character only when it holds nothing else ([\t\n], [\x00-\x1f],
// [[:cntrl:]]). Control characters written as characters of their own (a
// literal, \n, \x1b, \x{85}) are kept.
//
// WARNING: this rebuilds the expression from syntax.Regexp.String, so it is
// only as right as that round trip and isolateAtoms' reading of p.
// FuzzPatternConfine proves both against the pattern as written: the result
// never matches more, and on commands without control characters it
// matches the same.
func compileNamedOnly(p string) (*regexp.Regexp, error) {
	re, err := syntax.Parse(isolateAtoms(p), syntax.Perl|syntax.DotNL)
	if err != nil {
		return nil, err
	}
	confineControls(re)
	return regexp.Compile(`^(?:` + re.String() + `)$`)
}

// isControl reports whether r is a C0 control (tab and newline too), DEL or
// a C1 control.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// nonControls is every code point but the control characters, as class
// ranges.
var nonControls = []rune{0x20, 0x7e, 0xa0, utf8.MaxRune}

// confineControls rewrites re in place: `.` becomes nonControls, and a class
// that holds anything besides control characters loses its control
// characters. Literals are left alone: they are what the owner named.
func confineControls(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		re.Op = syntax.OpCharClass
		re.Rune = append([]rune(nil), nonControls...)
	case syntax.OpCharClass:
		if !onlyControls(re.Rune) {
			re.Rune = withoutControls(re.Rune)
		}
	}
	for _, sub := range re.Sub {
		confineControls(sub)
	}
}

// onlyControls reports whether every range of the class ranges holds only
// control characters. An empty class holds none and is left alone.
func onlyControls(ranges []rune) bool {
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if !(hi < 0x20 || lo >= 0x7f && hi <= 0x9f) {
			return false
		}
	}
	return true
}

// withoutControls intersects class ranges with nonControls.
func withoutControls(ranges []rune) []rune {
	var out []rune
	for i := 0; i < len(ranges); i += 2 {
		for j := 0; j < len(nonControls); j += 2 {
			lo, hi := max(ranges[i], nonControls[j]), min(ranges[i+1], nonControls[j+1])
			if lo <= hi {
				out = append(out, lo, hi)
			}
		}
	}
	return out
}

// isolateAtoms returns p with each control character it writes outside
// brackets (literally, as an escape such as \n, \x1b, \x{85} or \012, or
// inside \Q...\E), each bracket class and each \p class put in a capturing
// group of its own. A group changes nothing p matches; it keeps the parser
// from merging alternatives into one class (`\n|;` into [\n;], or
// [\t\n]|x into [\t\nx]), after which a named control character could not
// be told from one that \s or [^;] supplies. p must be a valid expression.
func isolateAtoms(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], `\Q`):
			lit, _, found := strings.Cut(p[i+2:], `\E`)
			for _, r := range lit {
				writeLiteral(&b, r)
			}
			i += 2 + len(lit)
			if found {
				i += 2
			}
		case p[i] == '\\':
			n, r, single := escapeAt(p[i:])
			if single && isControl(r) || strings.HasPrefix(p[i:], `\p`) || strings.HasPrefix(p[i:], `\P`) {
				b.WriteString("(" + p[i:i+n] + ")")
			} else {
				b.WriteString(p[i : i+n])
			}
			i += n
		case p[i] == '[':
			n := classLen(p[i:])
			b.WriteString("(" + p[i:i+n] + ")")
			i += n
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			if isControl(r) {
				writeLiteral(&b, r)
			} else {
				b.WriteString(p[i : i+n])
			}
			i += n
		}
	}
	return b.String()
}

// writeLiteral writes r so that it matches only itself; a control character
// goes in a group of its own.
func writeLiteral(b *strings.Builder, r rune) {
	if isControl(r) {
		fmt.Fprintf(b, `(\x{%x})`, r)
		return
	}
	b.WriteString(regexp.QuoteMeta(string(r)))
}

// escapeAt reads the escape at the start of s (which starts with a
// backslash) as regexp/syntax does: its length, and the character it
// stands for when it stands for one.
func escapeAt(s string) (n int, r rune, single bool) {
	if len(s) < 2 {
		return len(s), 0, false
	}
	switch c := s[1]; c {
	case 'a':
		return 2, '\a', true
	case 'f':
		return 2, '\f', true
	case 't':
		return 2, '\t', true
	case 'n':
		return 2, '\n', true
	case 'r':
		return 2, '\r', true
	case 'v':
		return 2, '\v', true
	case '1', '2', '3', '4', '5', '6', '7', '0':
		n = 2
		r = rune(c - '0')
		for n < 4 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			r = r*8 + rune(s[n]-'0')
			n++
		}
		return n, r, true
	case 'x':
		if strings.HasPrefix(s[2:], "{") {
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return len(s), 0, false
			}
			return end + 1, hexValue(s[3:end]), true
		}
		if len(s) < 4 {
			return len(s), 0, false
		}
		return 4, hexValue(s[2:4]), true
	case 'p', 'P':
		if strings.HasPrefix(s[2:], "{") {
			if end := strings.IndexByte(s, '}'); end >= 0 {
				return end + 1, 0, false
			}
			return len(s), 0, false
		}
		_, size := utf8.DecodeRuneInString(s[2:])
		return 2 + size, 0, false
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return 1 + size, 0, false
}

// hexValue reads hex digits; the expression has been checked, so they are
// hex digits and the value is a code point.
func hexValue(h string) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			r = r*16 + c - '0'
		case c >= 'a' && c <= 'f':
			r = r*16 + c - 'a' + 10
		case c >= 'A' && c <= 'F':
			r = r*16 + c - 'A' + 10
		}
	}
	return r
}

// classLen is the length of the bracket class at the start of s, read as
// regexp/syntax reads it: a ] right after [ or [^ is a member, [:name:]
// is one member, and a backslash escapes the character after it.
func classLen(s string) int {
	i := 1
	if i < len(s) && s[i] == '^' {
		i++
	}
	for first := true; i < len(s); first = false {
		switch {
		case s[i] == ']' && !first:
			return i + 1
		case strings.HasPrefix(s[i:], "[:"):
			if end := strings.Index(s[i+2:], ":]"); end >= 0 {
				i += 2 + end + 2
				continue
			}
			i++
		case s[i] == '\\' && i+1 < len(s):
			_, size := utf8.DecodeRuneInString(s[i+1:])
			i += 1 + size
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	return len(s)
}

// patternsMatcher matches shell commands against a grant's patterns. A deny
// grant's matcher is loose: a match there refuses the call, so it must
// catch every command its patterns could be read to cover.
type patternsMatcher struct {
	patterns []compiledPattern
	deny     bool
}

// match reports whether a pattern matches the whole command.
//
// For an allowing grant, a command with a NUL byte never matches: execve
// would cut it short, and run a prefix of what was matched. Nor does one
// that is not UTF-8, which a pattern could not name. A control character
// matches only where a pattern names it.
func (m patternsMatcher) match(s *subject) (bool, string) {
	if m.deny {
		for i, p := range m.patterns {
			if p.loose.MatchString(s.raw) {
				return true, fmt.Sprintf("pattern %d %q matches the whole command", i+1, p.raw)
			}
		}
		return false, "no pattern matches the whole command"
	}
	if strings.IndexByte(s.raw, 0) >= 0 {
		return false, "the command holds a NUL byte, which no allowing pattern matches"
	}
	if !utf8.ValidString(s.raw) {
		return false, "the command is not valid UTF-8"
	}
	for i, p := range m.patterns {
		if p.named.MatchString(s.raw) {
			return true, fmt.Sprintf("pattern %d %q matches the whole command", i+1, p.raw)
		}
	}
	r, at := firstControl(s.raw)
	if at < 0 {
		return false, "no pattern matches the whole command"
	}
	for i, p := range m.patterns {
		if p.loose.MatchString(s.raw) {
			return false, fmt.Sprintf("no pattern matches the whole command: it holds the control character %s (first at byte %d), and pattern %d %q reaches it only through . or a class; a control character matches only a pattern that names it, e.g. %s",
				controlName(r), at, i+1, p.raw, controlName(r))
		}
	}
	return false, fmt.Sprintf("no pattern matches the whole command, which holds the control character %s (first at byte %d) that no pattern names", controlName(r), at)
}

// firstControl returns the first control character in s and its byte
// offset, or -1.
func firstControl(s string) (rune, int) {
	for i, r := range s {
		if isControl(r) {
			return r, i
		}
	}
	return 0, -1
}

// controlName writes a control character as a pattern would name it.
func controlName(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\f':
		return `\f`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\x%02x`, r)
}

// anyMatcher is the matcher of a tool without a constrained argument: a
// grant for it covers every call whose arguments parse.
type anyMatcher struct{}

func (anyMatcher) match(*subject) (bool, string) {
	return true, "the tool has no constrained argument"
}

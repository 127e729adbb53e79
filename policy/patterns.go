package policy

import (
	"fmt"
	"regexp"
	"strings"
)

// compilePattern compiles patterns entry n (counted from 1) anchored at both
// ends. The entry is compiled alone first: a valid RE2 expression has
// balanced groups, so wrapping it in ^(?:...)$ cannot let an alternative
// escape the anchors. An unterminated \Q would swallow the wrapper, so the
// wrapped form is checked too.
func compilePattern(n int, p string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(p); err != nil {
		return nil, fmt.Errorf("pattern %d is not a valid RE2 expression: %v", n, err)
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("pattern %d is not a valid RE2 expression once anchored (an unterminated \\Q?): %v", n, err)
	}
	return re, nil
}

// patternsMatcher matches shell commands against a grant's patterns.
type patternsMatcher struct {
	raw []string
	res []*regexp.Regexp
}

// match reports whether a pattern matches the whole command. A command with
// a NUL byte never matches: execve would cut it short, and run a prefix of
// what was matched.
func (m patternsMatcher) match(s *subject) (bool, string) {
	if strings.IndexByte(s.raw, 0) >= 0 {
		return false, "the command holds a NUL byte"
	}
	for i, re := range m.res {
		if re.MatchString(s.raw) {
			return true, fmt.Sprintf("pattern %d %q matches the whole command", i+1, m.raw[i])
		}
	}
	return false, "no pattern matches the whole command"
}

// anyMatcher is the matcher of a tool without a constrained argument: a
// grant for it covers every call whose arguments parse.
type anyMatcher struct{}

func (anyMatcher) match(*subject) (bool, string) {
	return true, "the tool has no constrained argument"
}

package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// problem is one reason a grant file is invalid, at the TOML key it
// concerns, so that the error can give its line.
type problem = KeyProblem

// Problem is one thing wrong with a grant file; Line is 0 when the problem
// has no line (a missing key, a bad file name).
type Problem struct {
	Line   int
	Reason string
}

// GrantError says why a grant file was refused: every problem found in it.
type GrantError struct {
	File     string
	Problems []Problem
}

// Error writes one "file:line: reason" line per problem.
func (e *GrantError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p.Reason)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.File, p.Reason)
		}
	}
	return b.String()
}

// short quotes s for a message, cut to a readable length: arguments come
// from the model and may be a megabyte long.
func short(s string) string {
	const limit = 120
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:runeCut(s, limit)], len(s))
}

// clip cuts an error text that may quote a model's argument.
func clip(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:runeCut(s, limit)] + "…"
}

// runeCut moves a cut at n back to the start of a rune.
func runeCut(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// TOMLError describes an error of go-toml's decoder as "line N: reason"
// (several joined with "; "): the one wording every strict TOML file of
// boxmaker (grants, jobs, config.toml, the scripted model's script) uses.
func TOMLError(err error) string {
	var parts []string
	for _, p := range tomlProblems(err, nil) {
		if p.Line > 0 {
			parts = append(parts, fmt.Sprintf("line %d: %s", p.Line, p.Reason))
		} else {
			parts = append(parts, p.Reason)
		}
	}
	return strings.Join(parts, "; ")
}

package brokerd

import (
	"slices"
	"strings"
	"unicode/utf8"

	"boxmaker/policy"
	"boxmaker/wire"
)

// taintLabel is a class and an untrusted flag, joined by max and or: what
// a result, a handle or a session takes on from what a call could read.
// The notes' own labels are notes.Label (labelOfNotes converts).
type taintLabel struct {
	class     wire.DataClass
	untrusted bool
}

func (a taintLabel) join(b taintLabel) taintLabel {
	return taintLabel{class: max(a.class, b.class), untrusted: a.untrusted || b.untrusted}
}

// redacted replaces every occurrence of an injected secret in tool output.
const redacted = "[redacted]"

// label turns a tool's content into the result the model is shown: secrets
// redacted, cut at max bytes on a UTF-8 boundary, and labelled from the
// grant it ran under joined with read, the labels of the notes its sandbox
// could read (DESIGN.md section 12). Nothing the tool said about itself is
// used.
func label(content string, g policy.Grant, read taintLabel, secrets []string, maxBytes int) wire.Result {
	content = redact(content, secrets)
	content, truncated := truncate(content, maxBytes)
	return wire.Result{Content: content, Class: max(g.ResultClass(), read.class), Untrusted: g.Untrusted() || read.untrusted, Truncated: truncated}
}

// redact hides each secret's value; the longest go first, so that a secret
// containing another is hidden whole.
func redact(s string, secrets []string) string {
	for _, sec := range byLength(secrets) {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}

func byLength(ss []string) []string {
	out := slices.Clone(ss)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// truncate cuts s to at most max bytes without splitting a character, and
// turns invalid UTF-8 into U+FFFD so that the result always encodes.
func truncate(s string, max int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

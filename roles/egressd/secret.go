package egressd

import (
	"bytes"
	"strings"
)

// redacted replaces the secret wherever egressd finds it.
const redacted = "[redacted]"

// secret is a call's Authorization value. egressd adds it to the upstream
// request and takes it out of everything else: the response the sandbox
// reads (an upstream may echo a key in an error message) and the log.
type secret struct {
	value   string
	needles []string // the whole value, the credential after its scheme, each as JSON may escape it
}

func newSecret(auth *string) secret {
	if auth == nil {
		return secret{}
	}
	s := secret{value: *auth, needles: []string{*auth}}
	if _, cred, ok := strings.Cut(*auth, " "); ok {
		if cred = strings.TrimSpace(cred); cred != "" && cred != *auth {
			s.needles = append(s.needles, cred)
		}
	}
	// A JSON encoder may write '/' as "\/" (PHP's does by default), and a
	// body is mostly JSON: the sandbox would read the secret once it
	// decodes it. Other encodings are not looked for (docs/decisions.md).
	for _, n := range s.needles {
		if strings.Contains(n, "/") {
			s.needles = append(s.needles, strings.ReplaceAll(n, "/", `\/`))
		}
	}
	return s
}

// isSet reports whether the call carries a secret.
func (s secret) isSet() bool { return s.value != "" }

func (s secret) redact(text string) string {
	for _, n := range s.needles {
		text = strings.ReplaceAll(text, n, redacted)
	}
	return text
}

// redactBody replaces every whole occurrence and, when the body was cut
// (a cut can fall inside an echoed key), also drops its tailHold: the
// same bytes whatever they are, so that the length of a cut body says
// nothing of whether its tail begins the secret.
func (s secret) redactBody(b []byte, truncated bool) []byte {
	longest := 0
	for _, n := range s.needles {
		b = bytes.ReplaceAll(b, []byte(n), []byte(redacted))
		longest = max(longest, len(n))
	}
	if !truncated || longest == 0 {
		return b
	}
	return b[:len(b)-tailHold(b, longest)]
}

// tailHold is how much of b's end could begin a needle of the longest
// length: of the line b ends in, the last longest-1 bytes. A needle holds
// no line break (it is a valid header value, JSON-escaped at most), so a
// whole line holds only whole ones, replaced already. The hold depends on
// where lines end, never on whether the tail begins the secret: a
// compromised sandbox can have a server echo what it sends, and a hold
// (or, at a cut, a drop) of a tail only when it begins the secret would
// tell it, by chunk sizes or the length of a cut body, whether its guess
// does, and so the secret a byte at a time.
func tailHold(b []byte, longest int) int {
	line := len(b) - (bytes.LastIndexByte(b, '\n') + 1)
	return max(0, min(line, longest-1))
}

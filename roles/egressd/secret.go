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

// redactBody replaces every whole occurrence and, when the body was cut,
// also drops a tail that is the start of one: a cut can fall inside an
// echoed key.
func (s secret) redactBody(b []byte, truncated bool) []byte {
	for _, n := range s.needles {
		b = bytes.ReplaceAll(b, []byte(n), []byte(redacted))
	}
	if !truncated {
		return b
	}
	for _, n := range s.needles {
		for k := min(len(n)-1, len(b)); k > 0; k-- {
			if bytes.HasSuffix(b, []byte(n[:k])) {
				b = b[:len(b)-k]
				break
			}
		}
	}
	return b
}

package egressd

import (
	"fmt"
	"strings"
)

// record is a call's one log line, filled in as the call goes: method,
// scheme, host and port, status and bytes; never a path, header or secret.
type record struct {
	method    string
	where     string
	status    int
	bytes     int
	redirects int
	truncated bool
	problem   string
}

func (r *record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> %d", orDash(r.method), orDash(r.where), r.status)
	if r.problem == "" {
		fmt.Fprintf(&b, ", %d bytes", r.bytes)
	}
	switch {
	case r.redirects == 1:
		b.WriteString(", 1 redirect")
	case r.redirects > 1:
		fmt.Fprintf(&b, ", %d redirects", r.redirects)
	}
	if r.truncated {
		b.WriteString(", truncated")
	}
	if r.problem != "" {
		fmt.Fprintf(&b, ": %s", r.problem)
	}
	return b.String()
}

func (r *record) addProblem(text string) {
	if r.problem != "" {
		text = r.problem + "; " + text
	}
	r.problem = text
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

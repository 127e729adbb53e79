package brokerd

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"boxmaker/policy"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"
)

// consultSubjectRunes is how much of a consult prompt the subject shows;
// the arguments below it hold the rest.
const consultSubjectRunes = 200

// subjectOf says in one line what a call acts on, for the owner deciding on
// it: derived from the decoded arguments, never from text loopd chose, and
// safe to print on a terminal or in a post (nothing invisible, nothing a
// terminal interprets).
func subjectOf(args wire.ToolArgs) string {
	switch a := args.(type) {
	case wire.HTTPFetchArgs:
		return urlSubject(a.URL)
	case wire.FileReadArgs:
		return pathSubject(wire.AbsolutePathsDimension, a.Path)
	case wire.NotesReadArgs:
		return "memory/" + pathSubject(wire.MemoryPathsDimension, a.Path)
	case wire.NotesWriteArgs:
		return fmt.Sprintf("memory/%s (%d bytes)", pathSubject(wire.MemoryPathsDimension, a.Path), len(a.Content))
	case wire.NotesSearchArgs:
		return clipped(a.Query)
	case wire.ShellArgs:
		return termtext.Line(a.Command)
	case wire.ConsultArgs:
		return clipped(a.Prompt)
	case wire.InspectArgs:
		return a.Handle + ": " + clipped(a.Question)
	case wire.McpArgs:
		return mcpSubject(a, nil)
	}
	return argumentsSubject(args)
}

// approvalSubject is subjectOf for an approval under grant g: an MCP call
// shows first the arguments g constrains, since those are what the owner
// is asked about.
func approvalSubject(args wire.ToolArgs, g policy.Grant) string {
	if a, ok := args.(wire.McpArgs); ok {
		return mcpSubject(a, g.ConstrainedArguments(a.Canonical))
	}
	return subjectOf(args)
}

// mcpSubject is the tool's full name, then each constrained argument as
// pointer=value (quoted in ASCII: a look-alike letter or an override shows
// as its escape), then all arguments as quoted data, then what the server
// claims of the tool, named as its claim and never trusted.
func mcpSubject(a wire.McpArgs, constrained []policy.ArgValue) string {
	var b strings.Builder
	b.WriteString(a.ToolName())
	for _, c := range constrained {
		v := c.Value
		if utf8.RuneCountInString(v) > consultSubjectRunes {
			v = string([]rune(v)[:consultSubjectRunes]) + "…"
		}
		b.WriteString(" " + termtext.Line(c.Pointer) + "=" + strconv.QuoteToASCII(v))
	}
	b.WriteString("; arguments " + clipped(a.Canonical))
	if a.Claims != "" {
		b.WriteString("; the server claims " + termtext.Line(a.Claims) + " (not checked)")
	}
	return b.String()
}

// argumentsSubject is the subject of a tool without a rule above: its
// canonical arguments, clipped like a prompt. A new tool thus shows the
// owner what it will run before anyone writes it a shorter subject.
func argumentsSubject(args wire.ToolArgs) string {
	canon, err := wire.EncodeArgs(args)
	if err != nil {
		return ""
	}
	return clipped(string(canon))
}

// clipped is the first consultSubjectRunes characters and the byte count.
func clipped(s string) string {
	if utf8.RuneCountInString(s) <= consultSubjectRunes {
		return fmt.Sprintf("%s (%d bytes)", termtext.Line(s), len(s))
	}
	head := string([]rune(s)[:consultSubjectRunes])
	return fmt.Sprintf("%s… (%d bytes)", termtext.Line(head), len(s))
}

// pathSubject is the cleaned path, as the grants matched it.
func pathSubject(dim wire.Dimension, p string) string {
	if clean, err := policy.CleanPath(dim, p); err == nil {
		p = clean
	}
	return termtext.Line(p)
}

// urlSubject is the URL with its host as policy read it (ASCII, punycode,
// lowercase) and every other character outside printable ASCII escaped: a
// look-alike letter or a right-to-left override cannot pass for another
// host or path.
func urlSubject(raw string) string {
	t, err := policy.ParseURLTarget(raw)
	if err != nil {
		return asciiOnly(raw)
	}
	_, rest, _ := strings.Cut(raw, "://")
	tail := ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		tail = rest[i:]
	}
	return t.Scheme + "://" + hostPort(t) + asciiOnly(tail)
}

// hostPort writes the host, and the port unless it is the scheme's own.
func hostPort(t policy.URLTarget) string {
	host := t.Host
	if t.Addr.Is6() {
		host = "[" + host + "]"
	}
	if t.Scheme == "https" && t.Port == 443 || t.Scheme == "http" && t.Port == 80 {
		return host
	}
	return host + ":" + strconv.Itoa(int(t.Port))
}

// asciiOnly escapes every character outside printable ASCII, as termtext
// writes an escape.
func asciiOnly(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

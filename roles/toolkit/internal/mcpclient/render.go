package mcpclient

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"boxmaker/roles/internal/termtext"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Render turns a call's result into the text brokerd gets: the text blocks
// in order, embedded text resources as their text, and every image, audio
// clip, binary resource and link named by its type and size (or URI),
// never inlined; then the structured content as canonical JSON. The text
// is cut at limit bytes on a UTF-8 boundary.
func Render(res *mcp.CallToolResult, limit int) (text string, truncated bool) {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, block(c))
	}
	if res.StructuredContent != nil {
		if s, err := Canonical(res.StructuredContent); err == nil {
			parts = append(parts, s)
		} else {
			parts = append(parts, "[structured content that is not JSON]")
		}
	}
	return Cut(strings.Join(parts, "\n"), limit)
}

func block(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return named("image", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return named("audio", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", termtext.Line(Cut1(c.URI, 512)))
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[empty resource]"
		}
		if r.Blob != nil {
			return named("resource "+termtext.Line(Cut1(r.URI, 512)), r.MIMEType, len(r.Blob))
		}
		return r.Text
	default:
		return fmt.Sprintf("[content of type %T]", c)
	}
}

// named stands for binary content: its kind, its MIME type (as data,
// escaped and cut) and its size.
func named(kind, mime string, size int) string {
	return fmt.Sprintf("[%s %s, %d bytes]", kind, termtext.Line(Cut1(mime, 128)), size)
}

// Cut returns s cut to at most limit bytes on a UTF-8 boundary, and whether
// it cut.
func Cut(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// Cut1 is Cut without the flag.
func Cut1(s string, limit int) string {
	out, _ := Cut(s, limit)
	return out
}

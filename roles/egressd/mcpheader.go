package egressd

import (
	"net/http"
	"strings"
)

// The headers of a remote MCP exchange pass egressd by name, either way:
// streamable HTTP's few, never whatever the other side chose. A header a
// compromised sandbox adds (X-Original-URL, X-HTTP-Method-Override,
// X-Forwarded-*) is one a server or its front end may read as another path,
// method or client, which egressd's one path would not allow; a header a
// server sends back (Set-Cookie, a credential it trades for the token, or
// one whose very name spells the token) is nothing the client reads.

// mcpRequestHeaders are what the MCP client sends besides the Mcp-*
// headers (session id, protocol version, and the standard Mcp-Method,
// Mcp-Name and Mcp-Param-* of later protocol versions).
var mcpRequestHeaders = []string{"Accept", "Content-Type", "Last-Event-Id", "User-Agent"}

// mcpResponseHeaders are what the MCP client reads, or shows in an error,
// besides the Mcp-* headers.
var mcpResponseHeaders = []string{"Content-Type", "Cache-Control", "Retry-After", "Allow"}

// mcpRequestHeader is the sandbox's header, less all but streamable HTTP's.
// egressd adds the Authorization value itself.
func mcpRequestHeader(h http.Header) http.Header {
	return keepHeaders(h, mcpRequestHeaders)
}

// mcpResponseHeader is the server's header for the sandbox: streamable
// HTTP's only, the secret out of every value.
func mcpResponseHeader(h http.Header, sec secret) http.Header {
	out := keepHeaders(h, mcpResponseHeaders)
	for name, values := range out {
		for i, v := range values {
			values[i] = sec.redact(v)
		}
		if spellsSecret(name, sec) {
			delete(out, name) // an Mcp- name that spells the secret
		}
	}
	return out
}

// keepHeaders copies the headers of h named in names or beginning Mcp-.
func keepHeaders(h http.Header, names []string) http.Header {
	out := http.Header{}
	for name, values := range h {
		canon := http.CanonicalHeaderKey(name)
		keep := strings.HasPrefix(canon, "Mcp-")
		for _, n := range names {
			keep = keep || canon == n
		}
		if keep {
			out[canon] = append([]string(nil), values...)
		}
	}
	return out
}

// spellsSecret reports whether a header name holds the secret in any case:
// a name is canonicalised, which changes the case of its letters.
func spellsSecret(name string, sec secret) bool {
	lower := strings.ToLower(name)
	for _, n := range sec.needles {
		if strings.Contains(lower, strings.ToLower(n)) {
			return true
		}
	}
	return false
}

// encoded reports whether a response's body is encoded: any coding in any
// of its Content-Encoding values but identity, not only the first's.
func encoded(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for _, coding := range strings.Split(v, ",") {
			if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}

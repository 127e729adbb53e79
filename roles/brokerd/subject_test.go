package brokerd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// The subject rules of DESIGN.md section 11, one row each.
func TestSubjectOf(t *testing.T) {
	long := strings.Repeat("é", 250)
	for _, c := range []struct {
		name, tool, args, want string
	}{
		{"a plain URL", "http_fetch", `{"url":"https://example.org/a?b=c"}`, "https://example.org/a?b=c"},
		{"host in punycode", "http_fetch", `{"url":"https://bücher.example/"}`, "https://xn--bcher-kva.example/"},
		{"host lowercased", "http_fetch", `{"url":"https://EXAMPLE.org/"}`, "https://example.org/"},
		{"a right-to-left override in the path", "http_fetch", `{"url":"https://example.org/a\u202egpj.exe"}`, `https://example.org/a\u202egpj.exe`},
		{"zero-width and non-ASCII in the query", "http_fetch", `{"url":"https://example.org/?q=a\u200bb\u00e9"}`, `https://example.org/?q=a\u200bb\u00e9`},
		{"a port that is not the scheme's", "http_fetch", `{"url":"http://127.0.0.1:8080/x"}`, "http://127.0.0.1:8080/x"},
		{"the scheme's own port is left out", "http_fetch", `{"url":"https://example.org:443/"}`, "https://example.org/"},
		{"IPv6", "http_fetch", `{"url":"https://[2001:db8::1]:8443/"}`, "https://[2001:db8::1]:8443/"},
		{"an absolute path, cleaned", "file_read", `{"path":"/home/o/./notes//a.txt"}`, "/home/o/notes/a.txt"},
		{"a note", "notes_read", `{"path":"notes/todo.md"}`, "memory/notes/todo.md"},
		{"a note written, with its size", "notes_write", `{"path":"notes/x.md","content":"hello"}`, "memory/notes/x.md (5 bytes)"},
		{"a shell command with a newline", "shell", `{"command":"ls\nrm -rf ~"}`, `ls\nrm -rf ~`},
		{"a shell command with escapes", "shell", `{"command":"echo \u001b[2J\u0007"}`, `echo \x1b[2J\x07`},
		{"a short prompt", "consult", `{"prompt":"summarise"}`, "summarise (9 bytes)"},
		{"a long prompt: 200 characters and the size", "consult", `{"prompt":"` + long + `"}`, strings.Repeat("é", 200) + "… (500 bytes)"},
		{"a search", "notes_search", `{"query":"milk"}`, "milk (4 bytes)"},
		{"a question about a handle", "inspect", `{"handle":"h2","question":"rain?\u001b[2J","answer":{"type":"bool"}}`, `h2: rain?\x1b[2J (9 bytes)`},
	} {
		args, err := wire.DecodeToolArgs(c.tool, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := subjectOf(args); got != c.want {
			t.Errorf("%s: subject %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCanonicalArguments(t *testing.T) {
	for _, c := range []struct{ tool, in, want string }{
		{"shell", "{ \"command\" :\n\"ls\" }", `{"command":"ls"}`},
		{"shell", `{"command":"\u006cs"}`, `{"command":"ls"}`},
		{"notes_write", `{"content":"x","path":"a.md"}`, `{"path":"a.md","content":"x"}`},
		{"http_fetch", `{"url":"https://example.org/\u003c"}`, `{"url":"https://example.org/<"}`},
		// Arguments that do not decode stay as they came: they match no
		// grant, and the denial records what the model sent.
		{"shell", `{"command":"ls","x":1}`, `{"command":"ls","x":1}`},
		{"nope", `{}`, `{}`},
	} {
		// brokerd decodes a tool_request into this Call at its door.
		if got := wire.DecodeCall(c.tool, c.in).Arguments(); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.tool, c.in, got, c.want)
		}
	}
}

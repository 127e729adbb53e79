package upstream

import (
	"strings"
	"testing"
)

func TestParseUpstream(t *testing.T) {
	for _, c := range []struct{ raw, want, err string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"http://gpu.tailnet:8080/", "http://gpu.tailnet:8080", ""},
		{"https://gpu.example/llama/", "https://gpu.example/llama", ""},
		{"", "", "no upstream llama-server"},
		{"127.0.0.1:8080", "", "scheme must be http or https"},
		{"ftp://host", "", "scheme must be http or https"},
		{"http://", "", "has no host"},
		{"http://user:secret@host:8080", "", "credentials do not belong"},
		{"http://host:8080/?x=1", "", "a query or fragment"},
		{"http://host:8080/#top", "", "a query or fragment"},
	} {
		u, err := Parse(c.raw)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.raw, err, c.err)
		case c.err == "" && (err != nil || u.String() != c.want):
			t.Errorf("%q: %v, %v; want %s", c.raw, u, err, c.want)
		case strings.Contains(c.raw, "secret") && strings.Contains(err.Error(), "secret"):
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

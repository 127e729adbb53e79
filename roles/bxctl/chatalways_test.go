package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// alwaysFor derives the always-allow grant for a call under grant text.
func alwaysFor(t *testing.T, grant, tool, args, subject string) (alwaysGrant, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "asked.toml"), []byte(grant), 0o644); err != nil {
		t.Fatal(err)
	}
	return deriveAlways(dir, wire.Approval{Approval: "ap-1", Tool: tool, Subject: subject, Arguments: args, Grant: "asked", SessionTaint: wire.Private})
}

// decides reports what g alone decides for tool and args.
func decides(t *testing.T, g alwaysGrant, tool, args string) policy.Outcome {
	t.Helper()
	grant, err := policy.ParseGrant(g.id+".toml", g.text)
	if err != nil {
		t.Fatal(err)
	}
	d, err := policy.Decide([]policy.Grant{grant}, policy.Request{Tool: tool, Arguments: args, Taint: wire.Private})
	if err != nil {
		t.Fatal(err)
	}
	return d.Outcome()
}

// TestAlwaysGrantIsTheNarrowest: the grant allows exactly the approved
// call's host, path or command, keeps the asked grant's labels, and
// nothing next to it; it is read from brokerd's arguments, never from the
// subject text a hostile model could have shaped.
func TestAlwaysGrantIsTheNarrowest(t *testing.T) {
	const fetchAsk = "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"secret\"\nuntrusted = true\n[constraints]\nhosts = [\"*\"]\n"
	const shellAsk = "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"(?s).*\"]\n"
	const readAsk = "tool = \"file_read\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npaths = [\"/\"]\n"
	cases := []struct {
		name, grant, tool, args string
		same, other             []string // arguments it allows, and ones it must not
	}{
		{"https host", fetchAsk, "http_fetch", `{"url":"https://Docs.Example.org/a?b"}`,
			[]string{`{"url":"https://docs.example.org/other"}`},
			[]string{`{"url":"https://example.org/"}`, `{"url":"https://x.docs.example.org/"}`, `{"url":"http://docs.example.org/"}`, `{"url":"https://docs.example.org:8443/"}`}},
		{"http with a port", fetchAsk, "http_fetch", `{"url":"http://127.0.0.1:8080/x"}`,
			[]string{`{"url":"http://127.0.0.1:8080/y"}`},
			[]string{`{"url":"http://127.0.0.1:8081/x"}`, `{"url":"https://127.0.0.1:8080/x"}`}},
		{"a cleaned path", readAsk, "file_read", `{"path":"/etc/../etc/hostname"}`,
			[]string{`{"path":"/etc/hostname"}`},
			[]string{`{"path":"/etc/hostname2"}`, `{"path":"/etc/passwd"}`}},
		{"a command with metacharacters", shellAsk, "shell", `{"command":"ls -l *.txt | wc -l; echo (done)"}`,
			[]string{`{"command":"ls -l *.txt | wc -l; echo (done)"}`},
			[]string{`{"command":"ls -l a.txt | wc -l; echo (done)"}`, `{"command":"ls -l *.txt | wc -l; echo (done); rm -rf /"}`}},
		{"a command with a newline", shellAsk, "shell", `{"command":"echo a\nrm -rf /"}`,
			[]string{`{"command":"echo a\nrm -rf /"}`},
			[]string{`{"command":"echo a"}`, `{"command":"echo a\rrm -rf /"}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := alwaysFor(t, c.grant, c.tool, c.args, "https://harmless.example/ (what the subject text says)")
			if err != nil {
				t.Fatalf("no grant: %v", err)
			}
			for _, args := range append([]string{c.args}, c.same...) {
				if got := decides(t, g, c.tool, args); got != policy.Allowed {
					t.Errorf("%s: %v, want allowed\n%s", args, got, g.text)
				}
			}
			for _, args := range c.other {
				if got := decides(t, g, c.tool, args); got != policy.Denied {
					t.Errorf("%s: %v, want denied: the grant is wider than the call\n%s", args, got, g.text)
				}
			}
			if strings.Contains(string(g.text), "harmless") {
				t.Errorf("the grant took the subject's text:\n%s", g.text)
			}
		})
	}
	g, err := alwaysFor(t, fetchAsk, "http_fetch", `{"url":"https://docs.example.org/"}`, "")
	if err != nil || !strings.Contains(string(g.text), "result_class = 'secret'") || !strings.Contains(string(g.text), "untrusted = true") {
		t.Errorf("the asked grant's labels are not kept: %v\n%s", err, g.text)
	}
}

// TestNoAlwaysGrantWiderThanTheCall: a tool whose grants cannot name the
// call (notes_search, consult) and a call that reads a handle get none.
func TestNoAlwaysGrantWiderThanTheCall(t *testing.T) {
	for _, c := range []struct{ tool, args string }{
		{"notes_search", `{"query":"x"}`},
		{"consult", `{"prompt":"x"}`},
		{"shell", `{"command":"handle:h1"}`},
	} {
		grant := "tool = \"" + c.tool + "\"\nmode = \"ask\"\nmax_taint = \"private\"\n"
		if c.tool == "shell" {
			grant += "[constraints]\npatterns = [\".*\"]\n"
		}
		if g, err := alwaysFor(t, grant, c.tool, c.args, ""); err == nil {
			t.Errorf("%s %s: got a grant:\n%s", c.tool, c.args, g.text)
		}
	}
}

package bxctl

import (
	"regexp"
	"strings"
	"testing"
)

// The grants `boxmaker init` writes pass `grants check`, use when_untrusted
// for shell and notes_write, and give notes_search paths (DESIGN.md
// section 12).
func TestInitGrantsCheckAndUseWhenUntrusted(t *testing.T) {
	home := t.TempDir()
	if code, out, errOut := run(t, "init", "--home", home); code != 0 {
		t.Fatalf("init: status %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, "grants", "check", "--home", home)
	if code != 0 {
		t.Fatalf("grants check: status %d\n%s%s", code, out, errOut)
	}
	for _, row := range []string{
		`notes-search +notes_search +auto +secret +private +false +- +never +paths=\["notes"\]`,
		`notes-write +notes_write +ask +secret +private +false +deny +never +paths=\["notes"\]`,
		`shell +shell +auto +secret +private +false +ask +never +patterns=`,
		`notes-read +notes_read +auto +secret +private +false +- +never`,
		`fetch-public +http_fetch +ask +private +public +true +- +never`,
	} {
		if !regexp.MustCompile(`(?m)^` + row).MatchString(out) {
			t.Errorf("grants check lacks a row like %q:\n%s", row, out)
		}
	}

	explain := func(want string, args ...string) string {
		code, out, errOut := run(t, append([]string{"grants", "explain", "--home", home}, args...)...)
		if code != explainStatus(want) {
			t.Fatalf("%q: status %d, want %d\n%s%s", args, code, explainStatus(want), out, errOut)
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shell", `{"command":"date -u"}`}, "decision: auto: runs now under grant shell"},
		{[]string{"--untrusted", "shell", `{"command":"date -u"}`}, "decision: ask: waits for the owner's approval under grant shell"},
		{[]string{"--taint", "secret", "--untrusted", "shell", `{"command":"echo $((1+1))"}`}, "decision: ask: waits for the owner's approval under grant shell"},
		{[]string{"notes_write", `{"path":"notes/a.md","content":"x"}`}, "decision: ask: waits for the owner's approval under grant notes-write"},
		{[]string{"--untrusted", "notes_write", `{"path":"notes/a.md","content":"x"}`}, "decision: denied untrusted_session (grant notes-write)"},
		{[]string{"notes_write", `{"path":"core.md","content":"x"}`}, "decision: denied no_grant"},
		{[]string{"--untrusted", "notes_search", `{"query":"milk"}`}, "decision: auto: runs now under grant notes-search"},
	} {
		if out := explain(c.want, c.args...); !strings.Contains(out, c.want) {
			t.Errorf("explain %q:\n%s\nwant %q", c.args, out, c.want)
		}
	}
}

// `grants explain --untrusted` over the decision table's own grants.
func TestGrantsExplainUntrusted(t *testing.T) {
	grants := fixtures + "/policy/untrusted-grants"
	code, out, errOut := run(t, "grants", "explain", "--grants", grants, "--untrusted", "shell", `{"command":"whoami"}`)
	if code != 1 || !strings.Contains(out, "decision: denied untrusted_session (grant whoami-b)") ||
		!strings.Contains(out, `step 4: whoami-a: dropped: the session is untrusted and the grant says when_untrusted = "deny"`) {
		t.Errorf("status %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "grants", "explain", "--grants", grants, "shell", `{"command":"whoami"}`)
	if code != 0 || !strings.Contains(out, "decision: auto: runs now under grant whoami-b") {
		t.Errorf("trusted: status %d\n%s%s", code, out, errOut)
	}
}

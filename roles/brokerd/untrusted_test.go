package brokerd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/audit"
	"boxmaker/wire"
)

// Grants for the untrusted rule (DESIGN.md section 12), beside notesGrant,
// secretGrant and echoGrant.
const (
	searchGrant    = "tool = \"notes_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"
	writeGrant     = "tool = \"notes_write\"\nmode = \"ask\"\nmax_taint = \"secret\"\nuntrusted = false\nwhen_untrusted = \"deny\"\n[constraints]\npaths = [\"notes\"]\n"
	heldBackGrant  = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\nwhen_untrusted = \"ask\"\n[constraints]\npatterns = [\"printf [a-z]+\"]\n"
	consultGrant   = "tool = \"consult\"\nmode = \"ask\"\nmax_taint = \"private\"\n"
	expiredGrant   = "tool = \"file_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nexpires = 2020-01-01T00:00:00Z\n[constraints]\npaths = [\"/etc/hostname\"]\n"
	denyFetchGrant = "tool = \"http_fetch\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\nhosts = [\"*\"]\n"
)

func untrustedGrants() map[string]string {
	return map[string]string{
		"notes": notesGrant, "notes-secret": secretGrant, "echo": echoGrant, "search": searchGrant,
		"write": writeGrant, "held-back": heldBackGrant, "consult": consultGrant,
		"old": expiredGrant, "no-fetch": denyFetchGrant,
	}
}

// toolList asks for session s's tool list as loopd does.
func (h *home) toolList(s string) []wire.ToolSpec {
	h.t.Helper()
	res, _, err := h.call("loopd", wire.ToolList{Session: sessionID(h.t, s)})
	if err != nil {
		h.t.Fatalf("tool_list: %v\n%s", err, h.log)
	}
	list, ok := res.(wire.ToolListResult)
	if !ok {
		h.t.Fatalf("tool_list: %#v", res)
	}
	return list.Tools
}

func toolNames(specs []wire.ToolSpec) []string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

// tool_list names only the tools with a grant usable at the session's
// taint and trust, and says in each description when the session is
// tainted or untrusted.
func TestToolListFollowsTaintAndTrust(t *testing.T) {
	h := newHome(t, "", untrustedGrants())
	h.start()
	clean := []string{"notes_read", "notes_write", "notes_search", "shell", "consult"}
	specs := h.toolList("clean")
	if got := toolNames(specs); !slices.Equal(got, clean) {
		t.Errorf("clean session lists %v, want %v (no expired file_read, no deny-only http_fetch)", got, clean)
	}
	for _, s := range specs {
		if strings.Contains(s.Description, "This session") {
			t.Errorf("clean session: %s says %q", s.Name, s.Description)
		}
	}

	if r, ok := h.toolCall("secret", "notes_read", `{"path":"secret/bank.md"}`).(wire.Result); !ok || r.Class != wire.Secret {
		t.Fatalf("secret note: %#v\n%s", r, h.log)
	}
	specs = h.toolList("secret")
	if got, want := toolNames(specs), []string{"notes_read", "notes_write", "notes_search"}; !slices.Equal(got, want) {
		t.Errorf("secret session lists %v, want %v (shell and consult stop at private)", got, want)
	}
	for _, s := range specs {
		if !strings.HasSuffix(s.Description, taintedNote) || strings.Contains(s.Description, untrustedNote) {
			t.Errorf("secret session: %s says %q", s.Name, s.Description)
		}
	}

	if r, ok := h.toolCall("steered", "shell", `{"command":"echo a page said so"}`).(wire.Result); !ok || !r.Untrusted {
		t.Fatalf("untrusted result: %#v\n%s", r, h.log)
	}
	specs = h.toolList("steered")
	if got, want := toolNames(specs), []string{"notes_read", "notes_search", "shell", "consult"}; !slices.Equal(got, want) {
		t.Errorf("untrusted session lists %v, want %v (notes_write says when_untrusted = deny)", got, want)
	}
	for _, s := range specs {
		if !strings.HasSuffix(s.Description, untrustedNote) || strings.Contains(s.Description, taintedNote) {
			t.Errorf("untrusted session: %s says %q", s.Name, s.Description)
		}
	}
}

// brokerd decides with its own untrusted flag: a session that has read an
// untrusted result cannot write notes (when_untrusted = "deny") and must
// ask for what a clean session runs at once (when_untrusted = "ask").
func TestUntrustedSessionIsDecidedByItsFlag(t *testing.T) {
	h := newHome(t, "[broker]\napproval_timeout = \"1s\"\n", untrustedGrants())
	h.start()
	if r, ok := h.toolCall("clean", "shell", `{"command":"printf clean"}`).(wire.Result); !ok || !strings.HasPrefix(r.Content, "clean") {
		t.Fatalf("held-back grant in a clean session: %#v\n%s", r, h.log)
	}
	if !isResult(h.toolCall("steered", "shell", `{"command":"echo steered"}`)) {
		t.Fatalf("echo did not run\n%s", h.log)
	}
	want := wire.Denied{Reason: wire.UntrustedSession}
	if got := h.toolCall("steered", "notes_write", `{"path":"notes/planted.md","content":"obey"}`); got != want {
		t.Errorf("notes_write from an untrusted session: %#v, want %#v", got, want)
	}
	res, partial, err := h.call("loopd", wire.ToolRequest{Session: sessionID(t, "steered"), Call: 3, Tool: "shell", Arguments: `{"command":"printf steered"}`})
	if err != nil {
		t.Fatal(err)
	}
	if len(partial) != 1 || res != (wire.Denied{Reason: wire.ApprovalExpired}) {
		t.Errorf("held-back grant in an untrusted session: %#v then %#v, want an approval that expires", partial, res)
	}
	h.restart()
	if got := h.toolCall("steered", "notes_write", `{"path":"notes/planted.md","content":"obey"}`); got != want {
		t.Errorf("after a restart: %#v, want %#v", got, want)
	}
	lines, err := audit.Tail(filepath.Join(h.dir, "audit"), 1)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], `"outcome":"denied","reason":"untrusted_session","grant":"write"`) {
		t.Errorf("the denial is not audited with its grant: %q, %v", lines, err)
	}
}

// No grant may mount memory/core.md writable: brokerd parses grants as
// `grants check` does, so it ignores such a file (fail closed) and says why
// in its log, and the other grants keep working.
func TestCoreMdWritableGrantIsIgnored(t *testing.T) {
	h := newHome(t, "", map[string]string{
		"core":  "tool = \"notes_write\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"core.md\"]\n",
		"all":   "tool = \"notes_write\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\".\"]\n",
		"notes": notesGrant,
	})
	h.write("memory/core.md", "the owner's instructions\n")
	h.start()
	want := wire.Denied{Reason: wire.NoGrant}
	for _, path := range []string{"core.md", "./core.md", "notes/../core.md"} {
		if got := h.toolCall("s1", "notes_write", `{"path":"`+path+`","content":"obey the page"}`); got != want {
			t.Errorf("notes_write %s: %#v, want %#v", path, got, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(h.dir, "memory", "core.md")); err != nil || string(data) != "the owner's instructions\n" {
		t.Errorf("core.md is now %q (%v)", data, err)
	}
	if !isResult(h.toolCall("s1", "notes_read", `{"path":"notes/todo.md"}`)) {
		t.Error("the other grants stopped working")
	}
	for _, id := range []string{"core.toml", "all.toml"} {
		if log := h.log.String(); !strings.Contains(log, "ignoring a grant file") || !strings.Contains(log, id) ||
			!strings.Contains(log, "memory/core.md, the system prompt of every session") {
			t.Errorf("the log does not say why %s was ignored:\n%s", id, log)
		}
	}
}

package brokerd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// Grants of the handle tests (DESIGN.md section 15).
const (
	secretHandleGrant = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\nresult = \"handle\"\n[constraints]\npaths = [\"secret\"]\n"
	// A public action: the shell echoes, at most at private.
	publicEcho = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npatterns = [\"echo .*\", \"PIN [0-9]*\\\\n\"]\n"
	// Notes written anywhere under notes/, at any taint.
	notesWriteAny = "tool = \"notes_write\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"
)

func handleGrants() map[string]string {
	return map[string]string{"secret-handle": secretHandleGrant, "echo": publicEcho, "write": notesWriteAny}
}

// readHandle is the session's first handle, which every test here makes
// from memory/secret/bank.md ("PIN 0000\n").
func (h *home) readHandle(s string) wire.Result {
	h.t.Helper()
	return h.mustResult(s, "notes_read", `{"path":"secret/bank.md"}`)
}

// A result kept as a handle gives the model only its reference, labelled
// as the session is, and leaves the session's taint and trust as they were.
func TestHandleResultKeepsTheSessionClean(t *testing.T) {
	h := newHome(t, "", handleGrants())
	h.start()
	r := h.readHandle("s1")
	want := `{"handle":"h1","tool":"notes_read","class":"secret","untrusted":false,"bytes":9}`
	if r.Content != want || r.Class != wire.Private || r.Untrusted || r.Truncated {
		t.Fatalf("result %+v, want content %s at private", r, want)
	}
	if st := h.state("s1"); st.Taint != wire.Private || st.Untrusted {
		t.Fatalf("session after a handle: %+v", st)
	}
	if r := h.mustResult("s1", "shell", `{"command":"echo still clean"}`); !strings.Contains(r.Content, "still clean") {
		t.Errorf("a public action after a handle: %+v", r)
	}
	stored, err := os.ReadFile(filepath.Join(h.dir, "broker", "handles", "s1", "h1"))
	if err != nil || !strings.Contains(string(stored), `"content":"PIN 0000\n"`) || !strings.Contains(string(stored), `"class":"secret"`) {
		t.Errorf("stored handle %s, %v", stored, err)
	}
	if r := h.readHandle("s1"); !strings.Contains(r.Content, `"handle":"h2"`) {
		t.Errorf("the second handle: %+v", r)
	}
}

// A handle passed as an argument is decided at its class: a secret handle
// to a public action is denied taint_too_high, and the audit log keeps the
// reference, never the content.
func TestSecretHandleToAPublicActionIsDenied(t *testing.T) {
	h := newHome(t, "", handleGrants())
	h.start()
	h.readHandle("s1")
	if got := h.toolCall("s1", "shell", `{"command":"handle:h1"}`); got != (wire.Denied{Reason: wire.TaintTooHigh}) {
		t.Fatalf("secret handle as a command: %#v", got)
	}
	if st := h.state("s1"); st.Taint != wire.Private {
		t.Errorf("a denied call raised the session: %+v", st)
	}
	var found bool
	for _, rec := range h.auditRecords() {
		if strings.Contains(rec.Arguments, "PIN") {
			t.Errorf("the audit log holds a handle's content: %+v", rec)
		}
		if rec.Arguments == `{"command":"handle:h1"}` && rec.SessionTaint == wire.Secret {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit record names handle:h1 decided at secret: %+v", h.auditRecords())
	}
}

// Handles are per session: another session's h1 is unknown, and so is a
// name the session never had.
func TestAnotherSessionsHandleIsUnknown(t *testing.T) {
	h := newHome(t, "", handleGrants())
	h.start()
	h.readHandle("s1")
	for _, c := range []struct{ session, args string }{
		{"s2", `{"command":"handle:h1"}`},
		{"s1", `{"command":"handle:h2"}`},
		{"s1", `{"command":"handle:../s2/h1"}`},
	} {
		if got := h.toolCall(c.session, "shell", c.args); got != (wire.Denied{Reason: wire.UnknownHandle}) {
			t.Errorf("%s %s: %#v", c.session, c.args, got)
		}
	}
}

// The sandbox gets the content; the note it writes is labelled with the
// class and trust the handle raised the call to, and the call's result
// carries that label too.
func TestANoteWrittenFromAHandleTakesItsLabel(t *testing.T) {
	h := newHome(t, "", handleGrants())
	h.startLabelled()
	h.readHandle("s1")
	r := h.mustResult("s1", "notes_write", `{"path":"notes/pin.md","content":"handle:h1"}`)
	if r.Class != wire.Secret {
		t.Errorf("the write's result is labelled %v, want secret", r.Class)
	}
	data, err := os.ReadFile(filepath.Join(h.dir, "memory", "notes", "pin.md"))
	if err != nil || string(data) != "PIN 0000\n" {
		t.Fatalf("the note holds %q, %v", data, err)
	}
	res := h.ask("bxctl", wire.NotesShow{Path: "notes/pin.md"})
	show, ok := res.(wire.NotesShowResult)
	if !ok || show.Label == nil || show.Label.Class != wire.Secret {
		t.Errorf("the note's label: %#v", res)
	}
}

// Over handles.max_per_session nothing is kept, the model is told which
// bound, and the session stays as it was.
func TestHandleLimits(t *testing.T) {
	h := newHome(t, "[handles]\nmax_per_session = 1\n", handleGrants())
	h.start()
	h.readHandle("s1")
	got := h.toolCall("s1", "notes_read", `{"path":"secret/bank.md"}`)
	f, ok := got.(wire.Failed)
	if !ok || !strings.Contains(f.Message, "handles.max_per_session") || strings.Contains(f.Message, "PIN") {
		t.Fatalf("over the limit: %#v", got)
	}
	if st := h.state("s1"); st.Taint != wire.Private {
		t.Errorf("session %+v", st)
	}
	h2 := newHome(t, "[handles]\nmax_session_bytes = 4\n", handleGrants())
	h2.start()
	if f, ok := h2.toolCall("s1", "notes_read", `{"path":"secret/bank.md"}`).(wire.Failed); !ok || !strings.Contains(f.Message, "handles.max_session_bytes") {
		t.Errorf("over the byte bound: %#v", f)
	}
}

// The owner reads a handle on the admin socket; loopd's socket refuses it.
func TestHandleShow(t *testing.T) {
	h := newHome(t, "", handleGrants())
	h.start()
	h.readHandle("s1")
	res := h.ask("bxctl", wire.HandleShow{Session: sessionID(t, "s1"), Handle: "h1"})
	show, ok := res.(wire.HandleShowResult)
	if !ok || show.Ref == nil || show.Content != "PIN 0000\n" || show.Ref.Class != wire.Secret || show.Ref.Tool != "notes_read" {
		t.Fatalf("handle_show: %#v", res)
	}
	if res := h.ask("bxctl", wire.HandleShow{Session: sessionID(t, "s2"), Handle: "h1"}); res.(wire.HandleShowResult).Ref != nil {
		t.Errorf("another session's handle: %#v", res)
	}
	if _, _, err := h.call("loopd", wire.HandleShow{Session: sessionID(t, "s1"), Handle: "h1"}); err == nil {
		t.Error("loopd's socket answered handle_show")
	}
	// The owner's command: content sanitized, label beside it.
	h.write("memory/secret/esc.md", "clear\x1b[2J")
	h.readHandle("s1")
	h.mustResult("s1", "notes_read", `{"path":"secret/esc.md"}`)
	out, err := h.bxctl("handles", "show", "s1", "h3")
	if err != nil || !strings.Contains(out, `clear\x1b[2J`) || !strings.Contains(out, "h3: secret, trusted, 9 bytes from notes_read") {
		t.Errorf("handles show: %v\n%q", err, out)
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("an escape reached the terminal: %q", out)
	}
	if out, err := h.bxctl("handles", "show", "s1", "h9"); err == nil || !strings.Contains(out, "has no handle h9") {
		t.Errorf("an unknown handle: %v %s", err, out)
	}
}

// No grant mounts the handles: a file_read grant on broker/handles (or on
// one session's) is refused, and the content stays in brokerd.
func TestHandlesAreNeverMounted(t *testing.T) {
	h := newHome(t, "", handleGrants())
	dir := filepath.Join(h.dir, "broker", "handles")
	h.write("etc/grants/handles.toml", "tool = \"file_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\""+dir+"\"]\n")
	h.start()
	h.readHandle("s1")
	got := h.toolCall("s1", "file_read", `{"path":"`+filepath.Join(dir, "s1", "h1")+`"}`)
	if f, ok := got.(wire.Failed); !ok || !strings.Contains(f.Message, "boxmaker's own state") || strings.Contains(f.Message, "PIN") {
		t.Errorf("got %#v, want a refusal to mount state", got)
	}
}

package brokerd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/policy"
	"boxmaker/roles"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/wire"
)

// Notes remember who wrote them (DESIGN.md section 12), through the real
// brokerd binary and real sandboxes.

const (
	// labelWriteGrant writes notes/ without asking; its own labels are the
	// lowest a grant can give, so what a note carries comes from its writer.
	labelWriteGrant = "tool = \"notes_write\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npaths = [\"notes\", \"journal\"]\n"
	// labelReadGrant reads notes/ as public and trusted: whatever is
	// higher in a result came from a label.
	labelReadGrant   = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"
	labelSearchGrant = "tool = \"notes_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"
	journalSearch    = "tool = \"notes_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npaths = [\"journal\"]\n"
	// untrustedShell makes a session untrusted, as a fetched page would.
	untrustedShell = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = true\n[constraints]\npatterns = [\"echo .*\"]\n"
)

// startLabelled starts brokerd on h and waits until the files newHome
// wrote are older than a call's start less notes.Slack: else the first
// writer would count them as its own.
func (h *home) startLabelled() {
	h.t.Helper()
	h.start()
	time.Sleep(2 * notes.Slack)
}

func labelGrants() map[string]string {
	return map[string]string{"write": labelWriteGrant, "read": labelReadGrant, "notes-secret": secretGrant, "steer": untrustedShell}
}

// state asks brokerd, as the owner, for session s's taint and trust.
func (h *home) state(s string) wire.SessionStateResult {
	h.t.Helper()
	res, _, err := h.call("bxctl", wire.SessionState{Session: sessionID(h.t, s)})
	st, ok := res.(wire.SessionStateResult)
	if err != nil || !ok {
		h.t.Fatalf("session_state %s: %#v %v", s, res, err)
	}
	return st
}

func (h *home) mustResult(s, tool, args string) wire.Result {
	h.t.Helper()
	got := h.toolCall(s, tool, args)
	r, ok := got.(wire.Result)
	if !ok {
		h.t.Fatalf("%s %s in session %s: %#v\n%s", tool, args, s, got, h.log)
	}
	return r
}

// A note written by a session at each taint and trust is read back by a
// fresh session no cleaner than its writer was, and the reader's session
// takes that on. A public note exists only by the owner's endorsement: a
// session is never below private. Each row has its own home: a writer
// sees the whole folder its grant mounts, so one row's note would raise
// the next row's writer.
func TestANoteReadsAsItsWriterWas(t *testing.T) {
	type step func(h *home, s string)
	steer := func(h *home, s string) { h.mustResult(s, "shell", `{"command":"echo obey"}`) }
	secret := func(h *home, s string) { h.mustResult(s, "notes_read", `{"path":"secret/bank.md"}`) }
	for _, c := range []struct {
		name      string
		prepare   []step
		endorse   []string
		class     wire.DataClass
		untrusted bool
	}{
		{"private", nil, nil, wire.Private, false},
		{"private-untrusted", []step{steer}, nil, wire.Private, true},
		{"secret", []step{secret}, nil, wire.Secret, false},
		{"secret-untrusted", []step{steer, secret}, nil, wire.Secret, true},
		{"public", nil, []string{"--class", "public"}, wire.Public, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHome(t, "", labelGrants())
			h.startLabelled()
			writer, reader, note := "w-"+c.name, "r-"+c.name, "notes/"+c.name+".md"
			for _, p := range c.prepare {
				p(h, writer)
			}
			h.mustResult(writer, "notes_write", `{"path":"`+note+`","content":"written at `+c.name+`"}`)
			if c.endorse != nil {
				if out, err := h.bxctl(append([]string{"notes", "endorse", note}, c.endorse...)...); err != nil {
					t.Fatalf("endorse: %v %s", err, out)
				}
			}
			got := h.mustResult(reader, "notes_read", `{"path":"`+note+`"}`)
			if got.Class != c.class || got.Untrusted != c.untrusted || got.Content != "written at "+c.name {
				t.Errorf("read back %+v, want class %s untrusted %v", got, c.class, c.untrusted)
			}
			st := h.state(reader)
			if st.Taint != max(c.class, wire.Private) || st.Untrusted != c.untrusted {
				t.Errorf("the reader's session is %+v after reading it", st)
			}
		})
	}
}

// The label is on disk when the result comes back.
func TestNoteLabelledBeforeTheResult(t *testing.T) {
	h := newHome(t, "", labelGrants())
	h.startLabelled()
	h.mustResult("s1", "notes_read", `{"path":"secret/bank.md"}`)
	h.mustResult("s1", "notes_write", `{"path":"notes/leak.md","content":"PIN 0000"}`)
	h.stop() // as a crash would, right after the answer
	data, err := os.ReadFile(filepath.Join(h.dir, "broker", "notes", "labels", notes.LabelFile("notes/leak.md")))
	if err != nil || !strings.Contains(string(data), `"class":"secret"`) || !strings.Contains(string(data), `"session":"s1"`) {
		t.Fatalf("label on disk: %s (%v)", data, err)
	}
}

// Laundering through a note, as issue 12 found it: a secret session writes
// the secret into a note; a fresh session that reads it is secret, and its
// public shell call is denied taint_too_high.
func TestASecretNoteTaintsItsReader(t *testing.T) {
	h := newHome(t, "", map[string]string{"write": labelWriteGrant, "read": labelReadGrant, "notes-secret": secretGrant, "echo": echoGrant})
	h.startLabelled()
	h.mustResult("leaker", "notes_read", `{"path":"secret/bank.md"}`)
	h.mustResult("leaker", "notes_write", `{"path":"notes/leak.md","content":"PIN 0000"}`)
	if got := h.mustResult("fresh", "notes_read", `{"path":"notes/leak.md"}`); got.Class != wire.Secret {
		t.Fatalf("the note read back as %s", got.Class)
	}
	if got := h.toolCall("fresh", "shell", `{"command":"echo PIN 0000"}`); got != (wire.Denied{Reason: wire.TaintTooHigh}) {
		t.Fatalf("the reader's public call: %#v", got)
	}
}

// notes_read mounts only the note it reads: a secret note beside it does
// not raise it. notes_search mounts its grant's paths, and its result is
// labelled from every note in them.
func TestReadsAreLabelledFromWhatTheSandboxCouldSee(t *testing.T) {
	grants := labelGrants()
	grants["search"], grants["search-journal"] = labelSearchGrant, journalSearch
	h := newHome(t, "", grants)
	h.write("memory/journal/day.md", "bought milk\n")
	h.startLabelled()
	h.mustResult("leaker", "notes_read", `{"path":"secret/bank.md"}`)
	h.mustResult("leaker", "notes_write", `{"path":"notes/leak.md","content":"PIN 0000"}`)
	if got := h.mustResult("r1", "notes_read", `{"path":"notes/todo.md"}`); got.Class != wire.Public || h.state("r1").Taint != wire.Private {
		t.Errorf("a clean note beside a secret one read as %s", got.Class)
	}
	got := h.mustResult("r2", "notes_search", `{"query":"milk"}`)
	if got.Class != wire.Secret || h.state("r2").Taint != wire.Secret {
		t.Errorf("a search over a folder holding a secret note: %+v, session %+v", got, h.state("r2"))
	}
	if !strings.Contains(got.Content, "todo.md") || strings.Contains(got.Content, "day.md") {
		t.Errorf("the search saw beyond its grant's paths: %q", got.Content)
	}
	// Without the notes grant, the journal's grant answers: the secret note
	// is not in its paths, so it is not in its label either.
	os.Remove(filepath.Join(h.dir, "etc", "grants", "search.toml"))
	if got := h.mustResult("r3", "notes_search", `{"query":"milk"}`); got.Class != wire.Public || !strings.Contains(got.Content, "day.md") || strings.Contains(got.Content, "todo.md") {
		t.Errorf("a search of journal/: %+v", got)
	}
}

// mountsFor gives notes_read the one file, and notes_search the grant's
// existing paths entries, read-only.
func TestNotesMountsAreOnlyWhatTheCallNeeds(t *testing.T) {
	memory := t.TempDir()
	for _, p := range []string{"notes/todo.md", "notes/other.md", "journal/a.md"} {
		os.MkdirAll(filepath.Join(memory, filepath.Dir(p)), 0o700)
		os.WriteFile(filepath.Join(memory, p), []byte("x"), 0o600)
	}
	read, err := policy.ParseGrant("read.toml", []byte(labelReadGrant))
	if err != nil {
		t.Fatal(err)
	}
	m, err := mountsFor(read, wire.DecodeCall("notes_read", `{"path":"notes/todo.md"}`), memory, nil)
	if err != nil || len(m) != 1 || m[0].Host != filepath.Join(memory, "notes", "todo.md") || m[0].Path != "/memory/notes/todo.md" || m[0].Writable {
		t.Errorf("notes_read mounts %+v (%v)", m, err)
	}
	search, err := policy.ParseGrant("s.toml", []byte(strings.Replace(labelSearchGrant, `["notes"]`, `["journal", "notes/sub", "notes", "missing"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	m, err = mountsFor(search, wire.DecodeCall("notes_search", `{"query":"x"}`), memory, nil)
	if err != nil || len(m) != 2 || m[0].Path != "/memory/journal" || m[1].Path != "/memory/notes" || m[0].Writable || m[1].Writable {
		t.Errorf("notes_search mounts %+v (%v)", m, err)
	}
}

// A note changed behind brokerd's back keeps its label, across a restart;
// the owner endorses it lower, each flag changing its own half, and the
// endorsement is in the audit log with the owner as approver.
func TestLabelsFallOnlyByTheOwnersEndorsement(t *testing.T) {
	h := newHome(t, "", labelGrants())
	h.startLabelled()
	h.mustResult("w", "shell", `{"command":"echo obey"}`)
	h.mustResult("w", "notes_read", `{"path":"secret/bank.md"}`)
	h.mustResult("w", "notes_write", `{"path":"notes/planted.md","content":"obey"}`)
	h.write("memory/notes/planted.md", "\x1b[2Jedited by hand\n")
	h.restart()
	if got := h.mustResult("r1", "notes_read", `{"path":"notes/planted.md"}`); got.Class != wire.Secret || !got.Untrusted {
		t.Fatalf("changed behind brokerd's back: %+v", got)
	}
	out, err := h.bxctl("notes", "show", "notes/planted.md")
	for _, want := range []string{`\x1b[2Jedited by hand`, "secret, untrusted, written by session w call 1", "changed since it was labelled"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("notes show lacks %q (%v):\n%s", want, err, out)
		}
	}
	out, err = h.bxctl("notes", "list")
	if err != nil || !strings.Contains(out, "notes/todo.md") || !strings.Contains(out, "owner") || !strings.Contains(out, "session w call 1") {
		t.Errorf("notes list (%v):\n%s", err, out)
	}

	for _, refused := range [][]string{
		{"notes/todo.md", "--trusted"},                  // the owner's: no label
		{"secret/bank.md", "--class", "public"},         // likewise
		{"notes/../../etc/passwd", "--class", "public"}, // outside memory/
	} {
		if out, err := h.bxctl(append([]string{"notes", "endorse"}, refused...)...); err == nil {
			t.Errorf("endorse %v: %s", refused, out)
		}
	}
	if out, err := h.bxctl("notes", "endorse", "notes/planted.md", "--class", "private"); err != nil || !strings.Contains(out, "secret, untrusted -> private, untrusted (endorsed)") {
		t.Fatalf("endorse --class: %v %s", err, out)
	}
	if out, err := h.bxctl("notes", "endorse", "notes/planted.md", "--class", "secret"); err == nil || !strings.Contains(out, "only lowers") {
		t.Errorf("endorse up: %v %s", err, out)
	}
	if got := h.mustResult("r2", "notes_read", `{"path":"notes/planted.md"}`); got.Class != wire.Private || !got.Untrusted {
		t.Errorf("after --class private: %+v (the untrusted half must stay)", got)
	}
	if out, err := h.bxctl("notes", "endorse", "notes/planted.md", "--trusted"); err != nil {
		t.Fatalf("endorse --trusted: %v %s", err, out)
	}
	if got := h.mustResult("r3", "notes_read", `{"path":"notes/planted.md"}`); got.Class != wire.Private || got.Untrusted {
		t.Errorf("after --trusted: %+v (the class half must stay)", got)
	}
	res, err := audit.Verify(filepath.Join(h.dir, "audit"))
	if err != nil {
		t.Fatalf("audit verify: %v", err)
	}
	lines, _ := audit.Tail(filepath.Join(h.dir, "audit"), int(res.Records))
	var endorsements []string
	for _, l := range lines {
		if strings.Contains(l, `"tool":"notes_endorse"`) {
			endorsements = append(endorsements, l)
		}
	}
	if len(endorsements) != 2 ||
		!strings.Contains(endorsements[0], `"session":"w","call":1,"tool":"notes_endorse","arguments":"{\"path\":\"notes/planted.md\",\"class\":\"private\",\"trusted\":false}","session_taint":"secret"`) ||
		!strings.Contains(endorsements[0], `"outcome":"approved","grant":"","approver":"local:`+roles.UserName(uint32(os.Getuid()))+`"`) ||
		!strings.Contains(endorsements[1], `\"class\":null,\"trusted\":true`) {
		t.Errorf("endorsements in the audit log:\n%s", strings.Join(endorsements, "\n"))
	}
}

// A list longer than one frame comes in parts, every file once.
func TestNotesListSpansFrames(t *testing.T) {
	h := newHome(t, "", nil)
	for i := range 1500 {
		h.write(fmt.Sprintf("memory/bulk/%04d-%s.md", i, strings.Repeat("n", 120)), "x")
	}
	h.start()
	out, err := h.bxctl("notes", "list")
	if n := strings.Count(out, "\nbulk/"); err != nil || n != 1500 {
		t.Fatalf("listed %d of 1500 (%v)", n, err)
	}
}

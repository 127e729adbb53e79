package bxctl

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"boxmaker/wire"
)

// What `boxmaker notes` prints, without a brokerd: a sandbox names the
// files it writes and fills them, so both go through the sanitizer.

func noteLabel(t *testing.T, content string) wire.NoteLabel {
	t.Helper()
	s, err := wire.ParseSessionID("chat-1")
	if err != nil {
		t.Fatal(err)
	}
	sum := wire.Hash32(sha256.Sum256([]byte(content)))
	return wire.NoteLabel{Class: wire.Secret, Untrusted: true, Session: s, Call: 4, SHA256: &sum, Time: 1764580500125}
}

func TestNotesListShowsLabelsAndOwners(t *testing.T) {
	l := noteLabel(t, "x")
	var out bytes.Buffer
	writeNotes(&out, []wire.NoteEntry{
		{Path: "core.md"},
		{Path: "notes/\x1b[2Jplanted.md", Label: &l},
		{Path: "notes/big", Folder: true, Label: &l},
	})
	got := out.String()
	for _, want := range []string{"PATH", "core.md  ", "owner", `notes/\x1b[2Jplanted.md`, "secret", "untrusted", "session chat-1 call 4",
		"2025-12-01T09:15:00.125Z", "notes/big/ (folder)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the list lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("an escape reached the terminal:\n%q", got)
	}
	out.Reset()
	writeNotes(&out, nil)
	if out.String() != "no files under memory/\n" {
		t.Errorf("empty: %q", out.String())
	}
}

func TestNotesShowLabelGoesToStderr(t *testing.T) {
	l := noteLabel(t, "what the writer left")
	var errOut bytes.Buffer
	writeLabel(&errOut, wire.NotesShowResult{Path: "notes/a.md", Content: "changed by hand", LabelPath: "notes/a.md", Label: &l})
	for _, want := range []string{"notes/a.md: secret, untrusted, written by session chat-1 call 4", "changed since it was labelled"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	errOut.Reset()
	writeLabel(&errOut, wire.NotesShowResult{Path: "notes/b/c.md", Content: "x", LabelPath: "notes/b", Label: &l, Truncated: true})
	if s := errOut.String(); !strings.Contains(s, "the label of the folder notes/b") || !strings.Contains(s, "only the beginning") || strings.Contains(s, "changed since") {
		t.Errorf("folder label: %s", s)
	}
	errOut.Reset()
	writeLabel(&errOut, wire.NotesShowResult{Path: "notes/todo.md", Content: "x"})
	if !strings.Contains(errOut.String(), "no label (the owner's)") {
		t.Errorf("owner's file: %s", errOut.String())
	}
}

func TestNotesUsage(t *testing.T) {
	for _, args := range [][]string{
		{"notes", "frobnicate"},
		{"notes", "show"},
		{"notes", "show", "a", "b"},
		{"notes", "endorse", "notes/a.md"},
		{"notes", "endorse", "notes/a.md", "--class", "top"},
	} {
		if code, out, errOut := run(t, append(args, "--home", t.TempDir())...); code != 2 {
			t.Errorf("%v: status %d, want 2\n%s%s", args, code, out, errOut)
		}
	}
}

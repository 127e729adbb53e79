package bxctl

import (
	"bytes"
	"strings"
	"testing"

	"boxmaker/wire"
)

// An approval whose subject hides a default ignorable character (issue 23,
// finding 8) is shown with the character escaped: the owner cannot be
// asked to approve notes/to<U+034F>do.md under the look of todo.md.
func TestApprovalSubjectShowsHiddenCharacters(t *testing.T) {
	for _, hidden := range []string{"\u034f", "\ufe0f", "\u17b4", "\u17b5", "\u180b", "\u180f"} {
		var out bytes.Buffer
		describeApproval(&out, wire.Approval{Approval: "a1", Tool: "notes_write", Subject: "notes/to" + hidden + "do.md",
			Arguments: `{"path":"notes/to` + hidden + `do.md"}`, Grant: "notes"})
		shown := out.String()
		if strings.Contains(shown, hidden) || !strings.Contains(shown, `notes/to\u`) {
			t.Errorf("%+q: the approval shows %q", hidden, shown)
		}
	}
}

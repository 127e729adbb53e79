package brokerd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// An approval of an MCP call leads with the tool's full name and then the
// arguments its grant constrains, with their values quoted in ASCII (an
// override character shows as its escape), before all arguments as data.
func TestMCPApprovalSubjectLeadsWithConstrainedArguments(t *testing.T) {
	grant := "tool = \"mcp__bad__echo\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints.arguments.\"/text\"]\npatterns = [\".*\"]\n"
	h := newMCPHome(t, map[string]string{"bad-echo-ask": grant})
	h.pin()
	done := make(chan wire.Message, 1)
	go func() { done <- h.toolCall("s1", "mcp__bad__echo", `{"text":"look \u202e here"}`) }()
	a := waitForPending(t, h.home)
	want := `mcp__bad__echo /text="look \u202e here"; arguments {"text":"look `
	if !strings.HasPrefix(a.Subject, want) || strings.Contains(a.Subject, "\u202e") {
		t.Fatalf("subject\n got %s\nwant it to begin %s", a.Subject, want)
	}
	if out, err := h.bxctl("deny", a.Approval); err != nil {
		t.Fatalf("deny: %v %s", err, out)
	}
	<-done
}

package brokerd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// A handle reference in an MCP argument is refused with a reason of its
// own, never sent to the server as the bare reference nor substituted with
// content decided at a taint it was not decided at.
func TestMCPHandleReferenceIsRefused(t *testing.T) {
	h := newMCPHome(t, map[string]string{"bad-any": mcpAnyGrant})
	h.pin()
	if got := h.toolCall("s1", "mcp__bad__echo", `{"text":"handle:h1"}`); got != (wire.Denied{Reason: wire.NoGrant}) {
		t.Fatalf("a handle reference: %#v\n%s", got, h.log)
	}
	if r, ok := h.toolCall("s1", "mcp__bad__echo", `{"text":"a handle: h1"}`).(wire.Result); !ok || !strings.Contains(r.Content, "a handle: h1") {
		t.Errorf("text that is no reference: %#v", r)
	}
}

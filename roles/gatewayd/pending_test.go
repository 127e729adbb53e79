package gatewayd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// A call waiting for approval says, in its thread, how to answer it on the
// host: an approval of a call in a secret session gets no post here, and
// the owner must learn where it waits (issue 23, finding 5).
func TestAPendingCallNamesTheHostCommand(t *testing.T) {
	expires, err := wire.ParseTimestamp("2026-12-02T04:00:00.000Z")
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	for _, m := range []wire.Message{
		wire.ToolCallEvent{Call: 3, Tool: "shell", Arguments: `{"command":"printf x"}`},
		wire.ApprovalPendingEvent{Call: 3, Approval: "ap-0123456789abcdef", Expires: expires},
	} {
		if err := r.apply(m); err != nil {
			t.Fatal(err)
		}
	}
	got := r.render()
	for _, want := range []string{"waiting for approval `ap-0123456789abcdef`", "on the host: `boxmaker approve ap-0123456789abcdef`"} {
		if !strings.Contains(got, want) {
			t.Errorf("the thread shows\n%s\nwithout %q", got, want)
		}
	}
}

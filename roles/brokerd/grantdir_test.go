package brokerd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/poll"
	"boxmaker/wire"
)

// A running brokerd decides every call over the grant files as they are at
// that moment, though it parses a file only when it changed: an edit in
// place to the same size made at once, a file that breaks and is mended, a
// file removed.
func TestGrantChangesTakeEffectOnTheNextCall(t *testing.T) {
	h := newHome(t, "", map[string]string{"echo": echoGrant})
	h.start()
	// echo calls the tool; want nil stands for a result.
	echo := func(what string, want wire.Message) {
		t.Helper()
		got := h.toolCall("s1", "shell", `{"command":"echo hi"}`)
		if want == nil && !isResult(got) || want != nil && got != want {
			t.Fatalf("%s: %#v, want %#v\n%s", what, got, want, h.log)
		}
	}
	echo("the auto grant", nil)
	deny := strings.Replace(echoGrant, `"auto"`, `"deny"`, 1)
	if len(deny) != len(echoGrant) {
		t.Fatal("the edit must keep the size")
	}
	h.write("etc/grants/echo.toml", deny)
	echo("edited to deny in place", wire.Denied{Reason: wire.DeniedByGrant})
	h.write("etc/grants/echo.toml", "tool = \"shell\"\nmode = \"sometimes\"\n")
	echo("broken", wire.Denied{Reason: wire.NoGrant})
	// brokerd's log reaches h.log through a pipe: it may trail the answer.
	poll.Until(t, "brokerd's log to say it ignores the broken grant", func() bool {
		return strings.Contains(h.log.String(), "ignoring a grant file")
	})
	h.write("etc/grants/echo.toml", echoGrant)
	echo("mended", nil)
	if err := os.Remove(filepath.Join(h.dir, "etc/grants/echo.toml")); err != nil {
		t.Fatal(err)
	}
	echo("removed", wire.Denied{Reason: wire.NoGrant})
}

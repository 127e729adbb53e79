package brokerd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// A grant whose path the sandbox cannot mount (/tmp is the sandbox's own)
// fails the call with the reason, which loopd gives the model and the
// owner, rather than an internal error that says nothing.
func TestUnmountableGrantFailsWithTheReason(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "unmountable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "report.txt")
	if err := os.WriteFile(file, []byte("numbers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHome(t, "", map[string]string{
		"tmp": "tool = \"file_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"" + dir + "\"]\n",
	})
	h.start()
	res, _, err := h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: 1, Tool: "file_read", Arguments: `{"path":"` + file + `"}`})
	f, ok := res.(wire.Failed)
	if err != nil || !ok || !strings.Contains(f.Message, "file_read: not run: the sandbox cannot be set up: ") ||
		!strings.Contains(f.Message, "would cover the sandbox's own /tmp") {
		t.Fatalf("got %#v, %v; want a failure saying why\n%s", res, err, h.log)
	}
}

package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitLeavesAWayIn: the directories init makes above the home are
// open to the role users, and a directory above that blocks them is named
// with what to do.
func TestInitLeavesAWayIn(t *testing.T) {
	base, err := os.MkdirTemp("", "boxmaker-init") // under /tmp, open to all, unlike t.TempDir's parent
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	home := filepath.Join(base, "new", "deeper", "home")
	code, out, errOut := run(t, "init", "--home", home)
	if code != 0 {
		t.Fatalf("init: %d\n%s%s", code, out, errOut)
	}
	for _, dir := range []string{filepath.Join(base, "new"), filepath.Join(base, "new", "deeper")} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want 0755", dir, fi.Mode(), err)
		}
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("a warning for an open path:\n%s", out)
	}
	closed := filepath.Join(base, "closed")
	os.Mkdir(closed, 0o700)
	code, out, _ = run(t, "init", "--home", filepath.Join(closed, "home"))
	if code != 0 || !strings.Contains(out, "warning: "+closed+" is not open to other users (no o+x)") || !strings.Contains(out, "chmod o+x "+closed) {
		t.Errorf("init under a closed directory: %d\n%s", code, out)
	}
}

package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/audit"
)

// init chooses the audit log's name and keeps it in the home: the origin of
// its checkpoints, the same wherever the home is moved. A name that is not
// one (a space, an upper-case letter, a slash) is refused, and nothing is
// written.
func TestInitKeepsTheAuditName(t *testing.T) {
	home := t.TempDir()
	if code, out, errOut := run(t, "init", "--home", home, "--audit-name", "desk-7.example"); code != 0 {
		t.Fatalf("init: status %d\n%s%s", code, out, errOut)
	}
	if origin, err := audit.LoadOrigin(home); err != nil || origin != "desk-7.example/boxmaker-audit" {
		t.Fatalf("LoadOrigin = %q, %v", origin, err)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(home, moved); err != nil {
		t.Fatal(err)
	}
	if origin, _ := audit.LoadOrigin(moved); origin != "desk-7.example/boxmaker-audit" {
		t.Errorf("the moved home's origin is %q", origin)
	}

	other := t.TempDir()
	if code, _, _ := run(t, "init", "--home", other); code != 0 {
		t.Fatalf("init without --audit-name: status %d", code)
	}
	name, _ := os.ReadFile(filepath.Join(other, audit.NameFile))
	if !audit.ValidName(strings.TrimSpace(string(name))) || !strings.Contains(string(name), "-") {
		t.Errorf("the default name %q is not the host's and a random part", name)
	}
	for _, bad := range []string{"my box", "Desk", "a/b", ""} {
		fresh := t.TempDir()
		if bad == "" {
			bad = "-"
		}
		if code, _, _ := run(t, "init", "--home", fresh, "--audit-name", bad); code == 0 {
			t.Errorf("init --audit-name %q succeeded", bad)
		}
		if _, err := os.Stat(filepath.Join(fresh, "memory")); err == nil {
			t.Errorf("init --audit-name %q wrote the home", bad)
		}
	}
}

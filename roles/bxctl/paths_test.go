package bxctl

import (
	"path/filepath"
	"strings"
	"testing"
)

// --home counts wherever it stands on the line: before a group's command
// as well as after it (DESIGN.md section 2).
func TestHomeWhereverItStands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOXMAKER_HOME", filepath.Join(t.TempDir(), "elsewhere"))
	for _, args := range [][]string{
		{"sessions", "--home", home, "show", "x"},
		{"sessions", "show", "--home", home, "x"},
		{"notes", "--home", home, "show", "notes/x.md"},
	} {
		code, _, errOut := run(t, args...)
		if code != 1 || !strings.Contains(errOut, filepath.Join(home, "run")) {
			t.Errorf("%q: status %d, want 1 with an error about %s:\n%s", args, code, home, errOut)
		}
	}
	// The list reads the home's sessions/ when loopd does not answer.
	if code, _, errOut := run(t, "sessions", "--home", home); code != 0 || !strings.Contains(errOut, filepath.Join(home, "sessions")) {
		t.Errorf("sessions --home: status %d, want 0 reading %s:\n%s", code, filepath.Join(home, "sessions"), errOut)
	}
}

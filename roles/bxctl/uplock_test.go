package bxctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"boxmaker/roles/internal/hostsetup"
)

// TestSecondUpRefusesAtOnce: while one up holds the home, a second refuses
// before it touches anything: it names the first's pid, and leaves its log
// and run/up.json as they were.
func TestSecondUpRefusesAtOnce(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if code, out, errOut := run(t, "init", "--home", home); code != 0 {
		t.Fatalf("init: %d %s%s", code, out, errOut)
	}
	first, err := hostsetup.LockHome(home)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	log, state := filepath.Join(home, "up.log"), filepath.Join(home, "run", "up.json")
	for _, f := range []string{log, state} {
		os.WriteFile(f, []byte("the first up's\n"), 0o600)
	}
	code, _, errOut := run(t, "up", "--home", home, "--log", log, "--scripted-model")
	if code != 1 || !strings.Contains(errOut, "already up, pid "+strconv.Itoa(os.Getpid())+":") {
		t.Errorf("the second up: status %d, %s", code, errOut)
	}
	for _, f := range []string{log, state} {
		if data, err := os.ReadFile(f); string(data) != "the first up's\n" {
			t.Errorf("the second up changed %s: %q %v", f, data, err)
		}
	}
	first.Close()
	again, err := hostsetup.LockHome(home)
	if err != nil {
		t.Fatalf("the lock outlived its holder: %v", err)
	}
	again.Close()
}

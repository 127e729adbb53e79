package bxctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSecondUpRefusesAtOnce: while one up holds the home, a second refuses
// before it touches anything: it names the first's pid, and leaves its log
// and run/up.json as they were.
func TestSecondUpRefusesAtOnce(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if code, out, errOut := run(t, "init", "--home", home); code != 0 {
		t.Fatalf("init: %d %s%s", code, out, errOut)
	}
	first, err := lockHome(home)
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
	again, err := lockHome(home)
	if err != nil {
		t.Fatalf("the lock outlived its holder: %v", err)
	}
	again.Close()
}

// TestLockFileMustBeUps: the pid goes only into a regular file of one link
// that is the caller's; a link planted as run/up.lock is never followed.
func TestLockFileMustBeUps(t *testing.T) {
	home := t.TempDir()
	os.Mkdir(filepath.Join(home, "run"), 0o700)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	lock := filepath.Join(home, "run", "up.lock")
	for _, plant := range []func() error{
		func() error { return os.Symlink(victim, lock) },
		func() error { return os.Link(victim, lock) },
	} {
		os.Remove(lock)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		if f, err := lockHome(home); err == nil {
			f.Close()
			t.Errorf("locked through a planted link")
		}
		if data, _ := os.ReadFile(victim); string(data) != "keep" {
			t.Fatalf("the victim became %q", data)
		}
	}
}

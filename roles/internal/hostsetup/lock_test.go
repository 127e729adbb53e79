package hostsetup

import (
	"os"
	"path/filepath"
	"testing"
)

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

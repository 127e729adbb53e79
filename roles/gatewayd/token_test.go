package gatewayd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadTokenRefuses: the token file is opened itself, never through a
// link, and must be a regular file; systemd's stand-in for a credential it
// could not load (one newline) is an empty token, refused.
func TestReadTokenRefuses(t *testing.T) {
	secrets, creds := t.TempDir(), t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("stolen-token\n"), 0o600)
	os.Symlink(victim, filepath.Join(secrets, "linked"))
	os.Symlink(victim, filepath.Join(creds, "linked-cred"))
	syscall.Mkfifo(filepath.Join(secrets, "fifo"), 0o600)
	os.WriteFile(filepath.Join(creds, "fallback"), []byte("\n"), 0o400)
	for _, c := range []struct{ creds, name, want string }{
		{"", "linked", "symbolic link"},
		{creds, "linked-cred", "symbolic link"},
		{"", "fifo", "not a regular file"},
		{creds, "fallback", "is empty"},
	} {
		t.Setenv("CREDENTIALS_DIRECTORY", c.creds)
		tok, err := ReadToken(secrets, c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "stolen") {
			t.Errorf("%s: %q %v; want an error saying %q", c.name, tok, err, c.want)
		}
	}
}

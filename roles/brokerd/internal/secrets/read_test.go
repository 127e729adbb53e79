package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// TestReadSecretWhere: brokerd reads its own copies (systemd's, then
// up's) and secrets/ only when it has none; a copy directory is the whole
// truth, so a secret missing from it is not looked for in secrets/.
func TestReadSecretWhere(t *testing.T) {
	home := t.TempDir()
	paths := config.Paths{Home: home, Config: filepath.Join(home, "etc", "config.toml"), Secrets: filepath.Join(home, "etc", "secrets")}
	upDir, systemd := units.CredentialDir(home, "brokerd"), t.TempDir()
	for _, dir := range []string{paths.Secrets, upDir} {
		os.MkdirAll(dir, 0o700)
	}
	os.WriteFile(filepath.Join(paths.Secrets, "key"), []byte("from-secrets\n"), 0o600)
	os.WriteFile(filepath.Join(paths.Secrets, "only-in-secrets"), []byte("x\n"), 0o600)
	os.WriteFile(filepath.Join(upDir, "key"), []byte("from-up\r\n"), 0o400)
	os.WriteFile(filepath.Join(systemd, "key"), []byte("from-systemd\n"), 0o400)

	t.Setenv("CREDENTIALS_DIRECTORY", systemd)
	if v, err := Read(paths, "key"); v != "from-systemd" || err != nil {
		t.Errorf("systemd: %q %v", v, err)
	}
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	if v, err := Read(paths, "key"); v != "from-up" || err != nil {
		t.Errorf("up: %q %v", v, err)
	}
	if _, err := Read(paths, "only-in-secrets"); err == nil || !strings.Contains(err.Error(), "started without it") {
		t.Errorf("a secret up did not copy was read from secrets/: %v", err)
	}
	os.RemoveAll(filepath.Dir(upDir))
	if v, err := Read(paths, "key"); v != "from-secrets" || err != nil {
		t.Errorf("development home: %q %v", v, err)
	}
}

func TestReadSecretRefuses(t *testing.T) {
	home := t.TempDir()
	paths := config.Paths{Home: home, Secrets: filepath.Join(home, "etc", "secrets")}
	os.MkdirAll(paths.Secrets, 0o700)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("stolen\n"), 0o600)
	os.Symlink(victim, filepath.Join(paths.Secrets, "linked"))
	syscall.Mkfifo(filepath.Join(paths.Secrets, "fifo"), 0o600)
	os.WriteFile(filepath.Join(paths.Secrets, "fallback"), []byte("\n"), 0o600)
	os.WriteFile(filepath.Join(paths.Secrets, "big"), make([]byte, config.MaxSecretBytes+1), 0o600)
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	for name, want := range map[string]string{"linked": "symbolic link", "fifo": "not a regular file", "fallback": "is empty",
		"big": "over", "../etc": "plain file name", "absent": "no such file"} {
		v, err := Read(paths, name)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "stolen") {
			t.Errorf("%s: %q %v; want an error saying %q", name, v, err, want)
		}
	}
}

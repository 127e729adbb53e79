package mountview

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
)

// nobody is the user the tests run the "role" as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

// clone is a layout like a clone under root's home: base (0755) holds
// secret/ (0700), which holds the home, a binary, and a file no role needs.
func clone(t *testing.T) (secret, home, bin string) {
	t.Helper()
	base, err := os.MkdirTemp("", "mountview")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	secret = filepath.Join(base, "secret")
	home, bin = filepath.Join(secret, "clone", ".state"), filepath.Join(secret, "clone", "bin", "cat")
	cat, err := os.ReadFile("/bin/cat")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		os.Chmod(base, 0o755),
		os.MkdirAll(home, 0o711), os.Chmod(secret, 0o700), os.Chmod(home, 0o711),
		os.MkdirAll(filepath.Dir(bin), 0o755), os.WriteFile(bin, cat, 0o755),
		os.WriteFile(filepath.Join(home, "note"), []byte("reached\n"), 0o644),
		os.WriteFile(filepath.Join(secret, "private"), []byte("root's\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return secret, home, bin
}

func TestBlocked(t *testing.T) {
	require.Root(t, "the layout needs files of other users' reach")
	secret, home, bin := clone(t)
	blocked, err := Blocked([]string{home, bin}, []*syscall.Credential{nobody})
	if err != nil || !slices.Equal(blocked, []string{secret}) {
		t.Fatalf("Blocked: %v %v, want [%s]", blocked, err, secret)
	}
	os.Chmod(secret, 0o711)
	if blocked, err := Blocked([]string{home, bin}, []*syscall.Credential{nobody}); err != nil || len(blocked) != 0 {
		t.Errorf("with secret/ searchable: %v %v", blocked, err)
	}
}

// TestViewReachesWhatItBinds: as nobody, the binary and the home under a
// 0700 directory cannot be reached from the host, and can from the view,
// where the rest of that directory is hidden; the host's mounts stay as
// they were.
func TestViewReachesWhatItBinds(t *testing.T) {
	require.Root(t, "a mount namespace needs root")
	secret, home, bin := clone(t)
	note := filepath.Join(home, "note")
	plain := exec.Command(bin, note)
	plain.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	if out, err := plain.CombinedOutput(); err == nil {
		t.Fatalf("nobody reached the clone without a view: %s", out)
	}
	v, err := New([]string{home, bin}, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if out := runIn(t, v, nobody, bin, note); out != "reached\n" {
		t.Errorf("nobody in the view read %q", out)
	}
	if out := runIn(t, v, nil, "/bin/cat", filepath.Join(secret, "private")); !strings.Contains(out, "No such file") {
		t.Errorf("the view shows what it does not bind: %q", out)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(secret)) {
		t.Errorf("the host's mounts changed:\n%s", mounts)
	}
}

func runIn(t *testing.T, v *View, cred *syscall.Credential, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := v.Start(cmd); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return out.String()
}

package roles

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
)

// A daemon started as another user by root must find it cannot become root
// again; the check runs in a child that root starts as nobody.
func TestDaemonCannotRegainRoot(t *testing.T) {
	if os.Getenv("ROLES_TEST_REGAIN") == "1" {
		if err := cannotRegainRoot(); err != nil {
			t.Fatalf("regained root: %v", err)
		}
		return
	}
	require.Root(t, "starting a child as another user needs root")
	exe := copyForNobody(t)
	cmd := exec.Command(exe, "-test.run=^TestDaemonCannotRegainRoot$", "-test.v")
	cmd.Env = append(os.Environ(), "ROLES_TEST_REGAIN=1")
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	// And as root, where nothing was dropped, the same check must fail.
	if cannotRegainRoot() == nil {
		t.Fatal("root could not setuid(0): the check cannot tell a dropped process from root")
	}
}

// copyForNobody copies the test binary where nobody may execute it: the
// build directory is private to root.
func copyForNobody(t *testing.T) string {
	t.Helper()
	self, _ := os.Executable()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "roles-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "roles.test")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

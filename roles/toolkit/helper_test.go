//go:build linux && amd64

package toolkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

// The helper-process pattern: a test re-runs this test binary with
// helperEnv naming a child, which confines itself (for good, which is why
// it is a separate process) and reports what the kernel then allows.

const helperEnv = "BOXMAKER_TOOLKIT_HELPER"

var helperChildren = map[string]func(){
	"seccomp":         seccompChild,
	"landlock":        landlockChild,
	"landlock-system": landlockSystemChild,
}

// TestHelperProcess is not a test: it is the child's entry point.
func TestHelperProcess(t *testing.T) {
	child, ok := helperChildren[os.Getenv(helperEnv)]
	if !ok {
		require.Elsewhere(t, "the entry point of helper processes, not a test")
	}
	child()
	os.Exit(0)
}

// runHelper runs the named child with extra environment and returns its
// stdout, failing the test if it does not exit 0.
func runHelper(t *testing.T, name string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, helperEnv+"="+name)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %s: %v\nstdout:\n%s\nstderr:\n%s", name, err, out, stderr.String())
	}
	return string(out)
}

// hostDir makes a directory outside /tmp, which every sandbox may write and
// which toolrun refuses as a mount; BOXMAKER_TEST_HOSTDIR moves it.
func hostDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv("BOXMAKER_TEST_HOSTDIR")
	if base == "" {
		base = "/var/tmp"
	}
	dir, err := os.MkdirTemp(base, "boxmaker-test-")
	if err != nil {
		require.Available(t, "a directory for host paths outside /tmp (set BOXMAKER_TEST_HOSTDIR)", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

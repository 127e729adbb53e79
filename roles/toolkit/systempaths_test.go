//go:build linux && amd64

package toolkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/toolrun"

	"golang.org/x/sys/unix"
)

// landlockSystemChild confines itself as the shell tool does with one
// system path, LL_SYS, and says what the kernel let through.
func landlockSystemChild() {
	sys, out := os.Getenv("LL_SYS"), os.Getenv("LL_OUT")
	if err := restrictPaths(nil, &toolrun.System{Paths: []string{sys}, ShellPath: sys}); err != nil {
		fmt.Println("restrict failed:", err)
		return
	}
	errno := func(err error) unix.Errno {
		var e unix.Errno
		if err == nil || errors.As(err, &e) {
			return e
		}
		return unix.EIO
	}
	for _, p := range []probe{
		{"run a program in the system path", func() unix.Errno { return errno(exec.Command(filepath.Join(sys, "tool")).Run()) }, 0},
		{"read in the system path", func() unix.Errno { _, err := os.ReadFile(filepath.Join(sys, "tool")); return errno(err) }, 0},
		{"write in the system path", func() unix.Errno { return errno(os.WriteFile(filepath.Join(sys, "new"), nil, 0o600)) }, unix.EACCES},
		{"run /usr/bin/true", func() unix.Errno { return errno(exec.Command("/usr/bin/true").Run()) }, 0},
		{"read outside", func() unix.Errno { _, err := os.ReadFile(filepath.Join(out, "secret")); return errno(err) }, unix.EACCES},
	} {
		fmt.Printf("%s\t%d\t%d\n", p.name, p.call(), p.refused)
	}
}

// A system path ([sandbox] system_paths, /nix/store on NixOS) is readable
// and executable under the shell tool's Landlock rules, and nothing more.
func TestLandlockAllowsSystemPaths(t *testing.T) {
	if _, err := toolrun.LandlockABI(); err != nil {
		require.Available(t, "landlock", err)
	}
	base := hostDir(t)
	sys, out := filepath.Join(base, "sys"), filepath.Join(base, "out")
	writeFile(t, filepath.Join(out, "secret"), "hunter2")
	copyExecutable(t, "/usr/bin/true", filepath.Join(sys, "tool"))
	output := runHelper(t, "landlock-system", "LL_SYS="+sys, "LL_OUT="+out)
	sc := bufio.NewScanner(strings.NewReader(output))
	n := 0
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			t.Fatalf("the child said %q", output)
		}
		if f[1] != f[2] {
			t.Errorf("%s: errno %s, want %s", f[0], f[1], f[2])
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d probes ran, want 5:\n%s", n, output)
	}
}

// Through bwrap and toolkit together: a command on the shell path in a
// system path runs, the system path is read-only, and without it the
// command is not there at all.
func TestShellRunsFromSystemPaths(t *testing.T) {
	tools := hostDir(t)
	if err := os.Chmod(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tools, "bin", "hello")
	writeFile(t, script, "#!/bin/sh\necho hello from the tools\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	sys := &toolrun.System{Paths: []string{tools}, ShellPath: tools + "/bin:/usr/bin:/bin"}
	cmd := "hello; echo x 2>/dev/null >" + tools + "/new || echo read-only"
	out := toolRun{tool: "shell", args: map[string]string{"command": cmd}, system: sys}.output(t)
	if !out.OK || out.Content != "hello from the tools\nread-only\n[exit status 0]" {
		t.Errorf("shell with the system path = %+v", out)
	}
	out = toolRun{tool: "shell", args: map[string]string{"command": script}}.output(t)
	if !out.OK || !strings.Contains(out.Content, "not found") || !strings.HasSuffix(out.Content, "[exit status 127]") {
		t.Errorf("shell without the system path = %+v", out)
	}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

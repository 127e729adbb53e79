//go:build linux && amd64

package toolkit

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/toolrun"

	"golang.org/x/sys/unix"
)

// landlockProbes run in a child confined to a read-only and a writable
// directory; each says whether the kernel let it through.
func landlockProbes(ro, rw, out string) []probe {
	try := func(err error) unix.Errno {
		var errno unix.Errno
		if errors.As(err, &errno) || err == nil {
			return errno
		}
		return unix.EIO
	}
	return []probe{
		{"read in the read-only grant", func() unix.Errno { _, err := os.ReadFile(filepath.Join(ro, "f")); return try(err) }, 0},
		{"write in the read-only grant", func() unix.Errno { return try(os.WriteFile(filepath.Join(ro, "g"), nil, 0o600)) }, unix.EACCES},
		{"write in the writable grant", func() unix.Errno { return try(os.WriteFile(filepath.Join(rw, "g"), nil, 0o600)) }, 0},
		{"read outside the grants", func() unix.Errno { _, err := os.ReadFile(filepath.Join(out, "secret")); return try(err) }, unix.EACCES},
		{"read /etc/passwd", func() unix.Errno { _, err := os.ReadFile("/etc/passwd"); return try(err) }, unix.EACCES},
		{"list /", func() unix.Errno { _, err := os.ReadDir("/"); return try(err) }, unix.EACCES},
		{"run /bin/true", func() unix.Errno { return try(exec.Command("/bin/true").Run()) }, unix.EACCES},
		{"tcp connect", func() unix.Errno { c, err := net.Dial("tcp4", "127.0.0.1:9"); closeIf(c); return try(err) }, unix.EACCES},
	}
}

func closeIf(c net.Conn) {
	if c != nil {
		c.Close()
	}
}

func landlockChild() {
	ro, rw, out := os.Getenv("LL_RO"), os.Getenv("LL_RW"), os.Getenv("LL_OUT")
	err := restrictPaths([]toolrun.Mount{{Path: ro}, {Path: rw, Writable: true}}, nil)
	if err != nil {
		fmt.Println("restrict failed:", err)
		return
	}
	for _, p := range landlockProbes(ro, rw, out) {
		fmt.Printf("%s\t%d\n", p.name, p.call())
	}
}

func TestLandlockConfines(t *testing.T) {
	abi, err := toolrun.LandlockABI()
	if err != nil {
		require.Available(t, "landlock", err)
	}
	base := hostDir(t)
	ro, rw, out := filepath.Join(base, "ro"), filepath.Join(base, "rw"), filepath.Join(base, "out")
	for _, d := range []string{ro, rw, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(ro, "f"), "readable")
	writeFile(t, filepath.Join(out, "secret"), "hunter2")
	got := map[string]unix.Errno{}
	output := runHelper(t, "landlock", "LL_RO="+ro, "LL_RW="+rw, "LL_OUT="+out)
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		if name, errno, ok := strings.Cut(sc.Text(), "\t"); ok {
			var n int
			fmt.Sscan(errno, &n)
			got[name] = unix.Errno(n)
		}
	}
	for _, p := range landlockProbes(ro, rw, out) {
		if p.name == "tcp connect" && abi < 4 {
			continue // Landlock governs TCP from ABI 4 on
		}
		if e, ok := got[p.name]; !ok || e != p.refused {
			t.Errorf("%s under landlock: errno %d (%v), want %d; the child said:\n%s", p.name, e, e, p.refused, output)
		}
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

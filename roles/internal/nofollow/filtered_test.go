//go:build amd64

package nofollow

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"boxmaker/fixtures/require"

	"golang.org/x/sys/unix"
)

// filteredTreeEnv hands the child of TestOpenWhereOpenat2IsFiltered the
// tree it opens in.
const filteredTreeEnv = "BOXMAKER_NOFOLLOW_FILTERED_TREE"

// enosysFilter is a seccomp program that does to openat2 what systemd's
// RestrictSUIDSGID= does (ENOSYS) and allows everything else, in the form
// bwrap --seccomp reads: struct sock_filter, little-endian.
func enosysFilter() []byte {
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AUDIT_ARCH_X86_64, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_OPENAT2, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	var b []byte
	for _, f := range prog {
		b = binary.LittleEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.LittleEndian.AppendUint32(b, f.K)
	}
	return b
}

// TestOpenWhereOpenat2IsFiltered runs this test binary again under a real
// seccomp filter that answers openat2 with ENOSYS, as systemd's does for
// brokerd, and checks there that Open still opens and still refuses links.
func TestOpenWhereOpenat2IsFiltered(t *testing.T) {
	if root := os.Getenv(filteredTreeEnv); root != "" {
		underFilter(t, root)
		return
	}
	require.Root(t, "bwrap --dev-bind / / mounts as root")
	bwrap := require.Tool(t, "bwrap", "bubblewrap")
	filter := filepath.Join(t.TempDir(), "filter.bpf")
	if err := os.WriteFile(filter, enosysFilter(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filter)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bwrap, "--dev-bind", "/", "/", "--seccomp", "3", "--",
		os.Args[0], "-test.run=^TestOpenWhereOpenat2IsFiltered$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), filteredTreeEnv+"="+tree(t))
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("under the filter: %v\n%s", err, out)
	}
	t.Logf("under the filter:\n%s", out)
}

func underFilter(t *testing.T, root string) {
	if _, err := unix.Openat2(unix.AT_FDCWD, root, &unix.OpenHow{Flags: unix.O_PATH}); !errors.Is(err, unix.ENOSYS) {
		t.Fatalf("openat2 under the filter: %v, want ENOSYS (the filter is not in place)", err)
	}
	how := &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for name, want := range map[string]string{
		"dir/sub/deep": "opened ./dir/sub/deep", "link-in": "error ELOOP", "link-out": "error ELOOP",
		"dirlink/file": "error ELOOP", "../outside/secret": "error EXDEV", "/etc/passwd": "error EXDEV",
	} {
		if got := openIn(t, root, name, how, Open); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	abs := &unix.OpenHow{Flags: unix.O_PATH, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for name, want := range map[string]string{"@/dir/file": "opened ./dir/file", "@/dirlink/file": "error ELOOP", "/proc/self/root@/file": "error ELOOP"} {
		if got := openIn(t, root, name, abs, Open); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

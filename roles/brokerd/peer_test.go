package brokerd

import (
	"boxmaker/fixtures/poll"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
)

// A connection from a uid the socket does not expect is refused by the
// SO_PEERCRED check even when the directory's mode lets it through.
func TestWrongUIDIsRefusedPastPermissions(t *testing.T) {
	require.Root(t, "connecting as another uid needs root")
	h := newHome(t, "", allGrants())
	h.start()
	bin := boxmakerBinary(t)
	// Mis-set every mode on the way, as an owner's mistake would.
	for _, p := range []string{filepath.Dir(bin), filepath.Dir(h.dir), h.dir, filepath.Join(h.dir, "run"), filepath.Dir(h.socket("bxctl"))} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(h.socket("bxctl"), 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "approvals", "--home", h.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "does not accept your uid") {
		t.Fatalf("nobody's approvals: %v\n%s", err, out)
	}
	// brokerd's log reaches h.log through a pipe: it may trail the answer.
	poll.Until(t, "brokerd to log the refusal", func() bool {
		return strings.Contains(h.log.String(), "refused a connection from uid 65534")
	})
}

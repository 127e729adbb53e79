package inferproxy

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/sock"
)

// A uid the socket does not accept gets a 403 before any of its request is
// read, the refusal is logged, and inferproxy goes on serving others.
func TestRefusedPeer(t *testing.T) {
	up := startRecorder(t)
	var allow atomic.Bool
	h := startProxy(t, up.srv.URL, Options{AllowPeer: func(sock.Peer) bool { return allow.Load() }})
	e := roundTrip(t, h.client, newRequest(t, "GET", proxyURL("/health"), nil))
	if e.status != 403 || string(e.body) != refusedBody {
		t.Errorf("refused peer: %d %s", e.status, e.body)
	}
	if !strings.Contains(h.logs.String(), "refused a connection from uid") {
		t.Errorf("log: %s", h.logs)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests from a refused peer", n)
	}
	allow.Store(true)
	h.client.CloseIdleConnections()
	if e := roundTrip(t, h.client, newRequest(t, "GET", proxyURL("/health"), nil)); e.status != 200 {
		t.Errorf("an accepted peer after a refused one: %d %s", e.status, e.body)
	}
}

// A real other uid is refused by SO_PEERCRED even when every mode on the
// way lets it through, as an owner's mistake might.
func TestOtherUIDIsRefusedPastPermissions(t *testing.T) {
	require.Root(t, "connecting as another uid needs root")
	up := startRecorder(t)
	h := startProxy(t, up.srv.URL, Options{})
	bin := copyTestBinary(t)
	openUp(t, h.socket)
	cmd := exec.Command(bin, "-test.run=^TestHelperDial$", "-test.v")
	cmd.Env = append(os.Environ(), "INFERPROXY_TEST_DIAL="+h.socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "status 403 "+refusedBody) {
		t.Fatalf("nobody's request: %v\n%s", err, out)
	}
	if !strings.Contains(h.logs.String(), "refused a connection from uid 65534") {
		t.Errorf("log: %s", h.logs)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

// TestHelperDial is the other uid's side of the test above.
func TestHelperDial(t *testing.T) {
	path := os.Getenv("INFERPROXY_TEST_DIAL")
	if path == "" {
		require.Elsewhere(t, "helper for TestOtherUIDIsRefusedPastPermissions")
	}
	resp, err := unixClient(path).Get(proxyURL("/health"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	t.Logf("status %d %s", resp.StatusCode, body)
}

// copyTestBinary puts this test binary where another uid can run it.
func copyTestBinary(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "inferproxy-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "inferproxy.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// openUp opens every directory on the way to socket, and the socket.
func openUp(t *testing.T, socket string) {
	for p := filepath.Dir(socket); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(socket, 0o666); err != nil {
		t.Fatal(err)
	}
}

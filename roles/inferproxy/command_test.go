package inferproxy

import (
	"boxmaker/fixtures/poll"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/roles"
)

// runCommand runs `boxmaker inferproxy ARGS` as main would, until ctx ends.
func runCommand(ctx context.Context, args ...string) error {
	cmd := Command()
	return cmd.Run(ctx, append([]string{"inferproxy"}, args...))
}

// Without an upstream, or with a bad one, inferproxy says so at start and
// creates no socket.
func TestCommandNeedsAnUpstream(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOXMAKER_UPSTREAM", "")
	err := runCommand(context.Background(), "--home", home)
	if err == nil || !strings.Contains(err.Error(), "no upstream llama-server: set [infer] upstream") ||
		!strings.Contains(err.Error(), filepath.Join(home, "etc", "config.toml")) || !strings.Contains(err.Error(), "BOXMAKER_UPSTREAM") {
		t.Errorf("error %v", err)
	}
	t.Setenv("BOXMAKER_UPSTREAM", "localhost:8080")
	if err := runCommand(context.Background(), "--home", home); err == nil || !strings.Contains(err.Error(), "scheme must be http or https") {
		t.Errorf("error %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "run")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a socket directory was made: %v", err)
	}
	var usage roles.UsageError
	if err := runCommand(context.Background(), "--home", home, "extra"); !errors.As(err, &usage) {
		t.Errorf("an argument: %v, want a usage error", err)
	}
}

// The command serves on run/loopd-inferproxy/infer.sock under the home,
// with the upstream from config.toml unless BOXMAKER_UPSTREAM names one,
// and stops cleanly when its context ends.
func TestCommandServes(t *testing.T) {
	up := startRecorder(t)
	home, err := os.MkdirTemp("", "ipcmd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	writeConfig(t, home, "[infer]\nupstream = \"http://127.0.0.1:1\"\n")
	t.Setenv("BOXMAKER_UPSTREAM", up.srv.URL) // the environment wins
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runCommand(ctx, "--home", home) }()
	socket := filepath.Join(home, "run", "loopd-inferproxy", "infer.sock")
	poll.Within(t, 5*time.Second, "infer.sock to appear", func() bool {
		_, err := os.Stat(socket)
		return err == nil
	})
	c := unixClient(socket)
	if e := roundTrip(t, c, newRequest(t, "GET", proxyURL("/props"), nil)); e.status != 200 || !strings.Contains(string(e.body), `"path":"/props"`) {
		t.Errorf("through the command: %d %s", e.status, e.body)
	}
	c.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stopping: %v", err)
	}
}

func writeConfig(t *testing.T, home, content string) {
	etc := filepath.Join(home, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "config.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

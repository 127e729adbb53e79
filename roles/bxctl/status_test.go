package bxctl

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/supervise"
)

// TestStatusNeverConnects: status tells a running role by its pid and its
// socket file. It is no client of most sockets, and a daemon logs every
// connection it refuses, so dialing them made each daemon log "refused a
// connection from uid 0" at every status.
func TestStatusNeverConnects(t *testing.T) {
	home := t.TempDir()
	paths := config.Paths{Home: home}
	os.MkdirAll(paths.Join("run"), 0o700)
	sock := filepath.Join(home, "run", "infer.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	writeUpState(paths, []supervise.Status{
		{Role: "inferproxy", State: supervise.StateRunning, PID: os.Getpid(), Sockets: []string{sock}},
		{Role: "brokerd", State: supervise.StateFailed, Sockets: []string{filepath.Join(home, "run", "broker.sock")},
			Reason: "died 6 times without running for 1m0s (last: exit status 1: audit: no space left on device)", Retry: "2026-12-01T18:05:03Z"},
	}, false, "")
	code, out, errOut := run(t, "status", "--home", home)
	if code != 1 || !strings.Contains(errOut, "1 roles not running") {
		t.Errorf("status: %d %s", code, errOut)
	}
	for _, want := range []string{"boxmaker is up in " + home, "\ninferproxy  running", "\nbrokerd     failed",
		"brokerd failed: died 6 times without running for 1m0s (last: exit status 1: audit: no space left on device); next try at 2026-12-01T18:05:03Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	select {
	case <-accepted:
		t.Error("status connected to a role's socket")
	case <-time.After(100 * time.Millisecond):
	}
}

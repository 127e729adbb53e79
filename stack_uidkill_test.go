package main

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
)

// TestUpEndsEveryProcessOfARole: what a compromised brokerd leaves behind in
// a session of its own does not outlive `up`'s stop, and the next `up`
// refuses to touch the home while a process of a role's user runs, naming
// it. Both through the real binary, its kill helper included.
func TestUpEndsEveryProcessOfARole(t *testing.T) {
	require.Root(t, "ending a role by its uid needs up to run as root")
	s := startStack(t, nil)
	_, left := startAs(t, "boxmaker-broker")
	s.stop()
	select {
	case <-left:
	case <-time.After(20 * time.Second):
		t.Fatalf("brokerd's setsid process outlived up's stop\n%s", s.log)
	}
	if !strings.Contains(s.log.String(), "brokerd: ending what is left of it") {
		t.Errorf("up did not say what it ended:\n%s", s.log)
	}

	stray, _ := startAs(t, "boxmaker-loop")
	out, err := exec.Command(s.bin, "up", "--home", s.home, "--scripted-model").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to touch the home") ||
		!strings.Contains(string(out), "pids "+strconv.Itoa(stray.Process.Pid)) {
		t.Errorf("up with a process of boxmaker-loop alive: %v\n%s", err, out)
	}
}

// startAs starts `sleep` as user in a session of its own; the channel closes
// when it has ended.
func startAs(t *testing.T, user string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credOf(t, user), Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return cmd, done
}

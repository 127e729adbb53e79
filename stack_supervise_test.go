package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
)

// One supervisor per home, and a role that keeps dying fails alone.

// TestStackSecondUpRefuses: a second up on a home that one serves refuses at
// once, naming the first's pid, and leaves the first's state alone: status
// still says up. Neither status made a daemon log a refused connection.
func TestStackSecondUpRefuses(t *testing.T) {
	s := startStack(t, nil)
	s.run("status")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	secondLog := filepath.Join(s.home, "second.log")
	second := exec.CommandContext(ctx, s.bin, "up", "--home", s.home, "--scripted-model", "--create-users", "--log", secondLog)
	out, err := second.CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "already up, pid "+strconv.Itoa(s.up.Process.Pid)+":") {
		t.Fatalf("the second up: %v\n%s\nthe first's log:\n%s", err, out, s.log)
	}
	if _, err := os.Stat(secondLog); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second up wrote a log: %v", err)
	}
	if status := s.run("status"); !strings.Contains(status, "boxmaker is up in "+s.home+" (supervisor pid "+strconv.Itoa(s.up.Process.Pid)+")") {
		t.Errorf("status after the second up:\n%s", status)
	}
	s.run("chat", "--message", "hello")
	if strings.Contains(s.log.String(), "refused a connection") {
		t.Errorf("a daemon refused a connection:\n%s", s.log)
	}
}

// TestStackBrokerdWithAFullDisk: when audit/ fills up, brokerd stops at the
// write that failed, leaving a torn line, and each restart fails to write
// the recovery record; it is marked failed, says why, and is tried again
// rarely, while the other roles go on untouched (before, six deaths of it
// stopped every role for good). When space returns, brokerd comes back by
// itself and a tool call works.
func TestStackBrokerdWithAFullDisk(t *testing.T) {
	require.Root(t, "a small tmpfs as audit/ needs root")
	disk := t.TempDir() // a small file system: audit/ and, beside it, what fills it
	s := launchStack(t, "", []string{"--failed-retry", "2s"}, nil, func(home string) {
		audit := filepath.Join(home, "audit")
		os.MkdirAll(audit, 0o700)
		if err := syscall.Mount("tmpfs", disk, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=512k,mode=0700"); err != nil {
			require.Available(t, "tmpfs", err)
		}
		t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
		os.Mkdir(filepath.Join(disk, "audit"), 0o700)
		if err := syscall.Mount(filepath.Join(disk, "audit"), audit, "", syscall.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Unmount(audit, syscall.MNT_DETACH) })
	})
	s.run("chat", "--message", "read note welcome.md")
	others := map[string]int{"loopd": s.pidOf("loopd"), "inferproxy": s.pidOf("inferproxy"), "egressd": s.pidOf("egressd")}
	filler := filepath.Join(disk, "filler")
	fill(t, filler)
	// The calls' records fill what the last page of the day's file had left;
	// then a write fails, brokerd stops, and each restart fails to recover.
	for i := 0; i < 100 && s.pidOf("brokerd") != 0; i++ {
		s.try("chat", "--message", "read note welcome.md")
	}
	status := s.waitStatus(`(?m)^brokerd failed: died 6 times`, 60*time.Second)
	if !strings.Contains(status, "recovering the torn end of the log") || !strings.Contains(status, "no space left on device") {
		t.Errorf("status does not say why brokerd is down:\n%s", status)
	}
	for role, pid := range others {
		if now := s.pidOf(role); now != pid {
			t.Errorf("%s was pid %d, now %d: it did not go on while brokerd failed\n%s", role, pid, now, s.log)
		}
	}
	os.Remove(filler)
	s.waitStatus(`(?m)^brokerd +running`, 30*time.Second)
	if out := s.run("chat", "--message", "read note welcome.md"); !strings.Contains(out, "Welcome") {
		t.Errorf("the tool call after brokerd came back:\n%s", out)
	}
	s.run("audit", "verify")
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// waitStatus polls `boxmaker status` until it matches want, and returns it.
func (s *stack) waitStatus(want string, limit time.Duration) string {
	s.t.Helper()
	re := regexp.MustCompile(want)
	var out string
	if !poll.Holds(limit, 200*time.Millisecond, func() bool { out, _ = s.try("status"); return re.MatchString(out) }) {
		s.t.Fatalf("status never showed %q:\n%s\nup's log:\n%s", want, out, s.log)
	}
	return out
}

// TestStackInAPrivateDirectory: as root, with the binary and the home in a
// directory the role users cannot search (a clone under root's 0700 home),
// up still runs every role under its own user, and a tool call works.
// Before, up failed with "fork/exec ...: permission denied".
func TestStackInAPrivateDirectory(t *testing.T) {
	require.Root(t, "the role users exist only under up as root")
	s := launchStack(t, "", nil, nil, func(home string) {
		if err := os.Chmod(filepath.Dir(home), 0o700); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(s.log.String(), "up: the role users cannot search "+filepath.Dir(s.home)) {
		t.Errorf("up does not say why it made a view:\n%s", s.log)
	}
	if out := s.run("chat", "--message", "read note welcome.md"); !strings.Contains(out, "Welcome") {
		t.Errorf("the tool call:\n%s", out)
	}
	if got := uidName(t, s.pidOf("brokerd")); got != "boxmaker-broker" {
		t.Errorf("brokerd runs as %s", got)
	}
}

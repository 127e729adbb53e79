package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/require"
)

// What make run and make test need is checked first, by scripts/deps.sh:
// installed with apt-get as root, else named with the one command that
// installs it, at once.

// fakeBin is a directory for PATH: links to the host's commands but those
// left out, a fake id that reports uid, and, when apt is set, a fake
// apt-get that logs its arguments and "installs" bubblewrap.
func fakeBin(t *testing.T, uid string, apt bool, leaveOut ...string) (dir, aptLog string) {
	t.Helper()
	dir = t.TempDir()
	for _, from := range []string{"/usr/local/go/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		entries, _ := os.ReadDir(from)
		for _, e := range entries {
			name := e.Name()
			if name == "id" || name == "apt-get" || slices.Contains(leaveOut, name) {
				continue
			}
			os.Symlink(filepath.Join(from, name), filepath.Join(dir, name)) // the first wins
		}
	}
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("id", `case "$1" in -u) echo `+uid+`;; *) echo "uid=`+uid+`";; esac`+"\n")
	aptLog = filepath.Join(dir, "apt.log")
	if apt {
		write("apt-get", `echo "$*" >> `+aptLog+`
if [ "$1" = install ]; then ln -s /bin/true `+filepath.Join(dir, "bwrap")+`; fi
`)
	}
	return dir, aptLog
}

func TestDepsScript(t *testing.T) {
	for _, c := range []struct {
		name, uid string
		apt       bool
		leaveOut  []string
		status    int
		says      string
		aptRan    string
	}{
		{"all there", "1000", true, nil, 0, "", ""},
		{"not root", "1000", true, []string{"bwrap"}, 1, "boxmaker needs bubblewrap, which is not installed. Install it with:\n  sudo apt-get install -y bubblewrap\n", ""},
		{"root with apt", "0", true, []string{"bwrap"}, 0, "deps: installing bubblewrap with apt-get\n",
			"update -q\ninstall -y -q --no-install-recommends bubblewrap\n"},
		{"root without apt", "0", false, []string{"bwrap", "tmux"}, 1, "boxmaker needs bubblewrap tmux (Debian/Ubuntu package names)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, aptLog := fakeBin(t, c.uid, c.apt, c.leaveOut...)
			cmd := exec.Command("/bin/sh", "scripts/deps.sh", "bubblewrap", "tmux")
			cmd.Env = []string{"PATH=" + bin}
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != c.status || !strings.Contains(string(out), c.says) || (c.says == "" && len(out) > 0) {
				t.Errorf("status %d, want %d; output:\n%s", cmd.ProcessState.ExitCode(), c.status, out)
			}
			if ran, _ := os.ReadFile(aptLog); string(ran) != c.aptRan {
				t.Errorf("apt-get ran %q, want %q", ran, c.aptRan)
			}
		})
	}
}

// TestMakeRunWithoutBubblewrapStopsAtOnce: before this check, make run
// showed nothing for 60 s and then a socket error, the reason only in
// .state/up.log.
func TestMakeRunWithoutBubblewrapStopsAtOnce(t *testing.T) {
	bin, _ := fakeBin(t, "1000", true, "bwrap")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "run", "STATE="+filepath.Join(dir, "state"), "OUT="+filepath.Join(dir, "boxmaker"))
	cmd.Env = append(os.Environ(), "PATH="+bin)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "sudo apt-get install -y bubblewrap") {
		t.Fatalf("make run without bubblewrap: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "boxmaker")); err == nil {
		t.Errorf("make run built and went on before it checked what it needs")
	}
}

// TestMakeRunStopsWhenUpFails: when up ends before it is ready, make run
// says so at once with up's own error, rather than let chat wait 60 s and
// then blame loopd.
func TestMakeRunStopsWhenUpFails(t *testing.T) {
	require.Tool(t, "bwrap", "bubblewrap")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(filepath.Join(state, "etc"), 0o700)
	os.WriteFile(filepath.Join(state, "etc", "config.toml"), []byte("bogus = 1\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "run", "STATE="+state, "OUT="+filepath.Join(dir, "boxmaker"))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "bogus") ||
		!strings.Contains(string(out), "make run: boxmaker up stopped before it was ready (its log: "+state+"/up.log)") {
		t.Fatalf("make run with a broken config: %v\n%s", err, out)
	}
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
)

// A newcomer's first hour: a fresh clone in a directory only its owner may
// enter (as root: what root's own 0700 home is), the README's `make run` in
// a terminal, the tool call the scripted model suggests, and an approval
// answered from a second window of the same terminal session with nothing
// but the commands the README shows.
func TestNewcomerFromAFreshClone(t *testing.T) {
	require.Tool(t, "tmux", "tmux")
	require.Tool(t, "git", "git")
	require.Tool(t, "make", "make")
	require.Tool(t, "bwrap", "bubblewrap")
	approvals, approve := readmeCommand(t, "approvals"), readmeCommand(t, "approve ID")
	clone := freshClone(t)
	p := tmuxPane{t: t, server: fmt.Sprintf("boxmaker-newcomer-%d", os.Getpid())}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", "-c", clone, "sh")
	defer exec.Command("tmux", "-L", p.server, "kill-server").Run()
	p.tmux("send-keys", "-t", "chat", "make run", "Enter")
	wait := func(what string, re string) string {
		return p.waitForIn("chat:0", what, regexp.MustCompile(re), 240*time.Second, filepath.Join(clone, ".state", "up.log"))
	}
	wait("the chat prompt", `(?m)^you> $`)
	p.tmux("send-keys", "-t", "chat:0", "hello", "Enter")
	suggested := regexp.MustCompile(`Try .*"(read note [^"]+)"`)
	note := suggested.FindStringSubmatch(wait("the suggestion", suggested.String()))[1]
	p.tmux("send-keys", "-t", "chat:0", note, "Enter")
	wait("the note, read offline", `call 1: result: \d+ bytes`)

	p.tmux("send-keys", "-t", "chat:0", "fetch https://example.org/", "Enter")
	wait("the approval prompt", `\? \[y/N\]`)
	p.tmux("new-window", "-t", "chat", "-c", clone, "sh")
	p.tmux("send-keys", "-t", "chat:1", approvals, "Enter")
	listed := p.waitForIn("chat:1", "the pending approval", regexp.MustCompile(`ap-[0-9a-f]+`), 30*time.Second, "")
	id := regexp.MustCompile(`ap-[0-9a-f]+`).FindString(listed)
	p.tmux("send-keys", "-t", "chat:1", strings.Replace(approve, "ID", id, 1), "Enter")
	p.waitForIn("chat:1", "the answer", regexp.MustCompile(`approved `+id), 30*time.Second, "")
	audit, _ := exec.Command(filepath.Join(clone, "bin", "boxmaker"), "audit", "tail", "-n", "5", "--home", filepath.Join(clone, ".state")).CombinedOutput()
	if !regexp.MustCompile(`"tool":"http_fetch".*"decision":\{"outcome":"approved","grant":"fetch-public","approver":"local:`).Match(audit) {
		t.Errorf("the audit log does not show the approval:\n%s", audit)
	}
	if log, _ := os.ReadFile(filepath.Join(clone, ".state", "up.log")); os.Geteuid() == 0 && !strings.Contains(string(log), "up: the role users cannot search ") {
		t.Errorf("as root, up did not say why the roles see the clone through a view:\n%s", log)
	}
	p.tmux("send-keys", "-t", "chat:0", "Enter")
	p.tmux("send-keys", "-t", "chat:0", "/quit", "Enter")
	if !poll.Holds(60*time.Second, 200*time.Millisecond, func() bool {
		_, err := os.Stat(filepath.Join(clone, ".state", "run", "up.json"))
		return os.IsNotExist(err)
	}) {
		t.Fatalf("boxmaker is still up after /quit:\n%s", p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat:0"))
	}
}

// readmeCommand is the README's command line for a bxctl command: the
// first line of a shell block that runs bin/boxmaker with it.
func readmeCommand(t *testing.T, command string) string {
	t.Helper()
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.HasPrefix(line, "bin/boxmaker "+command+" ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("the README shows no `bin/boxmaker %s` command", command)
	return ""
}

// freshClone clones this repository into a directory only its owner may
// enter, and puts the working tree's changes not yet committed on top: the
// test is of the tree under test, as a newcomer would get it.
func freshClone(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(dir, "boxmaker")
	git := func(dir string, args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	here, _ := os.Getwd()
	git(here, "clone", "-q", "--no-hardlinks", here, clone)
	for _, name := range strings.Split(git(here, "ls-files", "-z", "-m", "-o", "--exclude-standard"), "\x00") {
		if data, err := os.ReadFile(name); name != "" && err == nil {
			fi, _ := os.Stat(name)
			os.MkdirAll(filepath.Dir(filepath.Join(clone, name)), 0o755)
			os.WriteFile(filepath.Join(clone, name), data, fi.Mode().Perm())
		}
	}
	for _, name := range strings.Split(git(here, "ls-files", "-z", "-d"), "\x00") {
		if name != "" {
			os.Remove(filepath.Join(clone, name))
		}
	}
	return clone
}

// waitForIn polls target's screen and scrollback until re matches, and
// returns them; on a timeout it fails with them and the log, if any.
func (p tmuxPane) waitForIn(target, what string, re *regexp.Regexp, limit time.Duration, log string) string {
	p.t.Helper()
	var screen string
	if !poll.Holds(limit, 100*time.Millisecond, func() bool {
		screen = p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", target)
		return re.MatchString(screen)
	}) {
		data, _ := os.ReadFile(log)
		p.t.Fatalf("no %s in %s:\n%s\nthe log:\n%s", what, target, screen, data)
	}
	return screen
}

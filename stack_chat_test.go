package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
)

// The interactive chat against the scripted model, in a real terminal
// (tmux), as a newcomer meets it after `make run`.

// chatPane starts `boxmaker chat` for the stack in a tmux pane; a line
// "[chat ended]" follows when chat exits.
func chatPane(t *testing.T, s *stack) tmuxPane {
	t.Helper()
	require.Tool(t, "tmux", "tmux")
	p := tmuxPane{t: t, server: fmt.Sprintf("boxmaker-chat-%d", os.Getpid())}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "chat", "-x", "200", "-y", "50",
		"sh -c '"+s.bin+" chat --home "+s.home+"; echo \"[chat ended]\"; sleep 600'")
	t.Cleanup(func() { exec.Command("tmux", "-L", p.server, "kill-server").Run() })
	return p
}

// scrollback is everything the pane showed.
func (p tmuxPane) scrollback() string {
	return p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat")
}

func has(re string) func(string) bool {
	return regexp.MustCompile(re).MatchString
}

// TestStackChatInATerminal: the banner names the scripted model; a tool
// call's line stands on its own line after the dimmed reasoning; the
// session is named once however many turns it has; Ctrl-D leaves the shell
// a fresh line.
func TestStackChatInATerminal(t *testing.T) {
	s := startStack(t, nil)
	p := chatPane(t, s)
	p.waitFor("the banner", has(`SCRIPTED MODEL \(fixed replies, not a language model\)`), s)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "read note welcome.md", "Enter")
	p.waitFor("the call on a line of its own", has(`(?m)^\(scripted model\) The owner wrote "read note".*notes/welcome\.md\.\n· call 1: notes_read `), s)
	p.waitFor("the result and the next prompt", has(`(?sm)This is a note in memory/notes.*^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "hello", "Enter")
	p.waitFor("the second reply", has(`(?sm)Hello! I am boxmaker.s scripted model.*^you> $`), s)
	if n := strings.Count(p.scrollback(), "· session "); n != 1 {
		t.Errorf("the session was named %d times in two turns:\n%s", n, p.scrollback())
	}
	p.tmux("send-keys", "-t", "chat", "C-d")
	p.waitFor("chat's end on a line of its own", has(`(?m)^\[chat ended\]`), s)
}

// TestStackChatReconnects: loopd is killed and restarted between two
// messages; the next message reconnects, says so, and the session goes on.
func TestStackChatReconnects(t *testing.T) {
	s := startStack(t, nil)
	p := chatPane(t, s)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "hello", "Enter")
	p.waitFor("the first reply", has(`(?sm)Hello! I am boxmaker's scripted model.*^you> $`), s)
	session := regexp.MustCompile(`· session (chat-[a-z0-9-]+)`).FindStringSubmatch(p.scrollback())
	if session == nil {
		t.Fatalf("no session named:\n%s", p.scrollback())
	}
	pid := s.pidOf("loopd")
	syscall.Kill(pid, syscall.SIGKILL)
	p.tmux("send-keys", "-t", "chat", "hello again", "Enter")
	p.waitFor("the reconnection", has(`reconnected to loopd; session `+session[1]+` goes on`), s)
	p.waitFor("the second reply", has(`(?sm)reconnected to loopd.*Hello! I am boxmaker's scripted model.*^you> $`), s)
	if shown := s.run("sessions", "show", session[1]); strings.Count(shown, "you: hello") != 2 {
		t.Errorf("the session does not hold both messages once:\n%s", shown)
	}
	if p := s.pidOf("loopd"); p == pid || p == 0 {
		t.Errorf("loopd's pid is %d, was %d", p, pid)
	}
}

// TestStackScriptedSuggestionWorks: the note the scripted model suggests
// reading exists in a fresh home, so trying it works offline.
func TestStackScriptedSuggestionWorks(t *testing.T) {
	s := startStack(t, nil)
	hello := s.run("chat", "--message", "hello")
	suggested := regexp.MustCompile(`"(read note [^"]+)"`).FindStringSubmatch(hello)
	if suggested == nil {
		t.Fatalf("the scripted model suggests no note:\n%s", hello)
	}
	out := s.run("chat", "--message", suggested[1])
	if !strings.Contains(out, "call 1: result: ") || !strings.Contains(out, "The tool answered.") {
		t.Errorf("%q did not read a note:\n%s", suggested[1], out)
	}
}

// TestStackFetchOfflineSaysWhy: a fetch whose host cannot be reached fails
// soon, and the chat says egressd's reason (here the name does not
// resolve: .invalid never does), not a bare status.
func TestStackFetchOfflineSaysWhy(t *testing.T) {
	s := startStack(t, map[string]string{
		"fetch-invalid": "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"nowhere.invalid\"]\n",
	}, func(home string) { os.Remove(filepath.Join(home, "etc", "grants", "fetch-public.toml")) })
	start := time.Now()
	out, err := s.try("chat", "--message", "fetch https://nowhere.invalid/")
	if err == nil || !strings.Contains(out, "call 1: failed: http_fetch: egressd: could not resolve nowhere.invalid: ") {
		t.Errorf("chat: %v\n%s\nup's log:\n%s", err, out, s.log)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the failure took %s to reach the chat", took)
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

// narrowPane is chatPane at width columns.
func narrowPane(t *testing.T, s *stack, width int) tmuxPane {
	t.Helper()
	require.Tool(t, "tmux", "tmux")
	p := tmuxPane{t: t, server: fmt.Sprintf("boxmaker-slash-%d", os.Getpid())}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "chat", "-x", fmt.Sprint(width), "-y", "50",
		"sh -c '"+s.bin+" chat --home "+s.home+"; echo \"[chat ended]\"; sleep 600'")
	t.Cleanup(func() { exec.Command("tmux", "-L", p.server, "kill-server").Run() })
	return p
}

// TestStackChatCommandsPasteAndWrap: the chat's slash commands act and
// never reach the model; a paste of three lines is one message; a long
// reply breaks between words, never inside one.
func TestStackChatCommandsPasteAndWrap(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	p := narrowPane(t, s, 60)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "/help", "Enter")
	p.waitFor("the help", has(`/resume NAME\s+go on in session NAME`), s)

	p.tmux("send-keys", "-t", "chat", "long", "Enter")
	screen := p.waitFor("the long reply", has(`(?s)alpha bravo.*yankee zulu`), s)
	reply := regexp.MustCompile(`(?s)alpha bravo.*yankee zulu`).FindString(screen)
	for _, line := range strings.Split(reply, "\n") {
		if len(line) > 60 {
			t.Errorf("a line the terminal had to cut (%d columns): %q", len(line), line)
		}
	}
	if got := strings.Join(strings.Fields(reply), " "); !strings.HasPrefix("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu", got) || !strings.HasSuffix(got, "yankee zulu") {
		t.Errorf("the wrapped reply's words changed: %q", got)
	}
	first := regexp.MustCompile(`· session (chat-[a-z0-9-]+)`).FindStringSubmatch(p.scrollback())[1]

	p.tmux("send-keys", "-t", "chat", "/status", "Enter")
	p.waitFor("the status", has(`session `+first+`: taint private`), s)
	p.tmux("send-keys", "-t", "chat", "/sessions", "Enter")
	p.waitFor("the sessions", has(first+`.*\(this one\)`), s)
	p.tmux("send-keys", "-t", "chat", "/approvals", "Enter")
	p.waitFor("no approvals", has(`(?m)^no pending approvals`), s)
	p.tmux("send-keys", "-t", "chat", "/frobnicate", "Enter")
	p.waitFor("the unknown command", has(`no chat command /frobnicate; /help lists them`), s)

	p.tmux("send-keys", "-t", "chat", "/new", "Enter")
	p.waitFor("the new session's note", has(`the next message starts a new session`), s)
	p.tmux("set-buffer", "-b", "three", "first line\nsecond line\nthird line")
	p.tmux("paste-buffer", "-p", "-b", "three", "-t", "chat")
	p.waitFor("the paste answered as one message", has(`\(day model\) the paste came as one message`), s)
	if n := strings.Count(p.scrollback(), "· session "); n != 2 {
		t.Errorf("/new: %d sessions named, want 2:\n%s", n, p.scrollback())
	}
	p.tmux("send-keys", "-t", "chat", "/resume "+first, "Enter")
	p.waitFor("the resumption", has(`session `+first+`: the next message goes on there \(turns so far: 1\)`), s)
	p.tmux("send-keys", "-t", "chat", "hi", "Enter")
	p.waitFor("the reply", has(`(?m)^\(day model\) hello`), s)
	if shown := s.run("sessions", "show", first); !strings.Contains(shown, "you: hi") || strings.Contains(shown, "/status") {
		t.Errorf("the resumed session:\n%s", shown)
	}
	p.tmux("send-keys", "-t", "chat", "/exit", "Enter")
	p.waitFor("chat's end", has(`(?m)^\[chat ended\]`), s)
}

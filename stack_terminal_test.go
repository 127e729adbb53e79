package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
)

// What the owner sees in a real terminal (tmux) when the model is hostile:
// its escape sequences, invisible characters and a painted fake approval
// are shown as text, and the real approval prompt names the real call.

// hostileReply is what a steered model streams before its call: clear the
// screen, home the cursor, set a two-line scroll region, retitle the
// window, a hidden hyperlink, a clipboard write, the 8-bit CSI, zero-width
// characters, and a fake approval for a harmless URL.
const hostileReply = "\x1b[2J\x1b[H\x1b[6;7r\x1b]0;PWNED\x07\x1b[10;1H" +
	"\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\ " +
	"\x1b]52;c;ZXZpbA==\x07 \u009b2J zero\u200bwidth\u2060joiner\n" +
	"approval ap-0000000000000000: http_fetch https://harmless.example/\n" +
	"approve ap-0000000000000000 (http_fetch https://harmless.example/)? [y/N] "

// hostileModel is the script of the steered model: hostileReply, then a
// fetch of a page on pageURL whose name hides a right-to-left override.
func hostileModel(pageURL string) string {
	return strings.NewReplacer("REPLY", tomlBasic(hostileReply), "PAGE", pageURL).Replace(`
[[rule]]
match = '^go$'
content = REPLY
[[rule.tool_calls]]
name = 'http_fetch'
arguments = '{"url":"PAGE/a\u202etxt.exe"}'

[[rule]]
role = 'tool'
content = '(hostile model) the call is over'

[[rule]]
content = '(hostile model) I read you'
`)
}

// tmuxPane is one tmux session on a private server.
type tmuxPane struct {
	t      *testing.T
	server string
}

func (p tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.server}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (p tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-J", "-t", "chat") }

// waitFor polls the screen until match finds something, and returns it.
func (p tmuxPane) waitFor(what string, match func(string) bool, s *stack) string {
	p.t.Helper()
	var screen string
	if !poll.Holds(60*time.Second, 100*time.Millisecond, func() bool { screen = p.screen(); return match(screen) }) {
		p.t.Fatalf("no %s on the screen:\n%s\nwith the scrollback:\n%s\nup's log:\n%s", what, screen,
			p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat"), s.log)
	}
	return screen
}

func TestStackTerminalShowsAHostileModelAsText(t *testing.T) {
	require.Tool(t, "tmux", "tmux")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "the attacker's page\n")
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	s := startStackScript(t, hostileModel(page.URL), map[string]string{
		"fetch-local": "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\nhosts = [\"http://" + host + "\"]\n",
	})
	p := tmuxPane{t: t, server: fmt.Sprintf("boxmaker-test-%d", os.Getpid())}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", s.bin+" chat --home "+s.home)
	defer exec.Command("tmux", "-L", p.server, "kill-server").Run()
	title := strings.TrimSpace(p.tmux("display-message", "-p", "-t", "chat", "#{pane_title}"))
	p.waitFor("the chat prompt", func(sc string) bool { return strings.Contains(sc, "you> ") }, s)
	p.tmux("send-keys", "-t", "chat", "go", "Enter")

	id := s.waitApproval()
	subject := `http://` + host + `/a\u202etxt.exe`
	prompt := "approve " + id + " (http_fetch " + subject + ")? [y/N]"
	screen := p.waitFor("the real approval prompt", func(sc string) bool { return strings.Contains(sc, prompt) }, s)
	t.Logf("the screen at the prompt:\n%s", screen)
	for _, want := range []string{`\x1b[2J`, `\x1b[6;7r`, `\x1b]0;PWNED\x07`, `\x1b]8;;https://evil.example/`, `\x1b]52;c;ZXZpbA==`,
		`\u009b2J`, `zero\u200bwidth\u2060joiner`, "approve ap-0000000000000000 (http_fetch https://harmless.example/)",
		"approval " + id + ": http_fetch " + subject} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen does not show %q:\n%s", want, screen)
		}
	}
	if strings.ContainsAny(screen, "\u202e\u200b\u2060") {
		t.Errorf("an invisible character reached the screen:\n%s", screen)
	}
	if now := strings.TrimSpace(p.tmux("display-message", "-p", "-t", "chat", "#{pane_title}")); now != title {
		t.Errorf("the pane title changed from %q to %q", title, now)
	}

	// Ctrl-C at the prompt denies, the chat stays, and what the owner types
	// next lands in the chat, not in a shell.
	p.tmux("send-keys", "-t", "chat", "C-c")
	p.waitFor("the refusal", func(sc string) bool { return strings.Contains(sc, "approval "+id+": refused") }, s)
	p.tmux("send-keys", "-t", "chat", "-l", "still here")
	p.waitFor("the typed text at the chat prompt", func(sc string) bool {
		return regexp.MustCompile(`(?m)^you> still here\s*$`).MatchString(sc)
	}, s)
	p.tmux("send-keys", "-t", "chat", "Enter")
	p.waitFor("the next reply", func(sc string) bool { return strings.Contains(sc, "(hostile model) I read you") }, s)
	if tail := s.run("audit", "tail", "-n", "1"); !strings.Contains(tail, `"outcome":"denied","reason":"approval_refused"`) {
		t.Errorf("the last audit record is not the refusal: %s", tail)
	}
	p.tmux("send-keys", "-t", "chat", "/quit", "Enter")
}

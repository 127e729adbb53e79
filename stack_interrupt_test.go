package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"boxmaker/fixtures/poll"
)

// The owner's day in a real terminal (tmux): a turn that hangs is
// cancelled with Ctrl-C and the chat goes on; a running tool is stopped;
// an approval answered elsewhere ends the prompt; y and a take one key.

// hangingModel is a llama-server whose every completion for a prompt that
// says "hang" never answers, as a wedged server; aborted counts those
// whose request was cancelled. Any other completion is a short reply.
func hangingModel(t *testing.T, aborted *atomic.Int32) string {
	t.Helper()
	done := make(chan struct{})
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/props":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"default_generation_settings":{"n_ctx":8192},"total_slots":4}`)
		case r.URL.Path == "/v1/chat/completions" && bytes.Contains(body, []byte("hang")) && !bytes.Contains(body, []byte("after the hang")):
			select {
			case <-r.Context().Done():
				aborted.Add(1)
			case <-done:
			}
		case r.URL.Path == "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"delta":{"content":"(hanging model) fine now"},"finish_reason":null}]}`+"\n\n"+
				`data: {"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"cache_n":0,"prompt_n":10,"predicted_n":3}}`+"\n\n"+
				"data: [DONE]\n\n")
		default:
			http.Error(w, "not served: "+r.URL.Path, http.StatusNotFound)
		}
	}))
	t.Cleanup(func() { close(done); model.Close() })
	return model.URL
}

// TestStackCtrlCCancelsAHangingTurn: with a model that never answers, the
// status line says what the turn waits for and for how long; Ctrl-C
// aborts the model's request, the chat says so and takes the next
// message in the same session; Ctrl-C twice at an empty prompt leaves.
func TestStackCtrlCCancelsAHangingTurn(t *testing.T) {
	var aborted atomic.Int32
	s := startStackUpstream(t, hangingModel(t, &aborted), nil)
	p := chatPane(t, s)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "hang please", "Enter")
	p.waitFor("the status line", has(`… waiting for the model, [2-9]s \(Ctrl-C cancels the turn\)`), s)
	p.tmux("send-keys", "-t", "chat", "C-c")
	p.waitFor("the cancellation", has(`turn cancelled: the model's request was aborted\. The session keeps the turn`), s)
	poll.Until(t, "the model's request to be aborted", func() bool { return aborted.Load() == 1 })
	p.waitFor("the prompt again", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "after the hang", "Enter")
	p.waitFor("the next reply", has(`(?m)^\(hanging model\) fine now`), s)
	if n := strings.Count(p.scrollback(), "· session "); n != 1 {
		t.Errorf("the chat named %d sessions; the cancelled turn's session should go on:\n%s", n, p.scrollback())
	}
	p.tmux("send-keys", "-t", "chat", "C-c")
	p.waitFor("the hint", has(`press Ctrl-C again \(or Ctrl-D\) to leave`), s)
	p.tmux("send-keys", "-t", "chat", "C-c")
	p.waitFor("chat's end", has(`(?m)^\[chat ended\]`), s)
}

// dayModel is the script of the owner's-day tests.
const dayModel = `
[[rule]]
match = '^slow$'
[[rule.tool_calls]]
name = 'shell'
arguments = '{"command":"sleep 86401"}'

[[rule]]
match = '^(?P<cmd>printf [a-z]+)$'
[[rule.tool_calls]]
name = 'shell'
arguments = '{"command":"${cmd}"}'

[[rule]]
role = 'tool'
content = '(day model) the tool answered'

[[rule]]
match = '(?s)^first line\n.*third line$'
content = '(day model) the paste came as one message'

[[rule]]
match = '^note (?P<text>.*)$'
[[rule.tool_calls]]
name = 'notes_write'
arguments = '{"path":"notes/day.md","content":"${text}\n"}'

[[rule]]
match = '^long$'
content = 'alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'

[[rule]]
content = '(day model) hello'
`

var dayGrants = map[string]string{
	"sleep-auto": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"sleep [0-9]+\"]\n",
	"printf-ask": "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"printf [a-z]+\"]\n",
}

// sleeping reports whether a process runs `sleep 86401`.
func sleeping() bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, _ := os.ReadFile(f); bytes.Equal(b, []byte("sleep\x0086401\x00")) {
			return true
		}
	}
	return false
}

// TestStackCtrlCStopsARunningTool: Ctrl-C while a sandboxed command runs
// kills it, and the chat says which call was stopped.
func TestStackCtrlCStopsARunningTool(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	p := chatPane(t, s)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "slow", "Enter")
	p.waitFor("the status line", has(`… waiting for call 1 \(shell\) to finish, [2-9]s`), s)
	poll.Until(t, "the sandboxed sleep to run", sleeping)
	p.tmux("send-keys", "-t", "chat", "C-c")
	p.waitFor("the cancellation", has(`turn cancelled: call 1 \(shell\) was stopped\.`), s)
	poll.Until(t, "the sandboxed sleep to be killed", func() bool { return !sleeping() })
	p.tmux("send-keys", "-t", "chat", "hi", "Enter")
	p.waitFor("the next reply", has(`(?m)^\(day model\) hello`), s)
}

// TestStackApprovalsInTheTerminal: y approves with one key; an approval
// answered from another terminal ends the prompt at once, naming who;
// a writes the narrowest grant on a second y, and the same call then runs
// without asking.
func TestStackApprovalsInTheTerminal(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	p := chatPane(t, s)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)

	p.tmux("send-keys", "-t", "chat", "printf one", "Enter")
	p.waitFor("the prompt", has(`(?m)\? \[y/N\] \(a: always\)\s*$`), s)
	p.tmux("send-keys", "-t", "chat", "y")
	p.waitFor("the approved call's result", has(`(?s)approved.*call 1: result: .*\(day model\) the tool answered`), s)

	p.tmux("send-keys", "-t", "chat", "printf two", "Enter")
	id := s.waitApproval()
	p.waitFor("the second prompt", has(`approve `+id+` \(shell printf two\)\? \[y/N\]`), s)
	s.run("approve", id)
	p.waitFor("the prompt's end", has(`approval `+id+` was answered elsewhere: approved by local:root`), s)
	p.waitFor("the result", has(`(?s)answered elsewhere.*call 2: result: `), s)

	p.tmux("send-keys", "-t", "chat", "printf three", "Enter")
	p.waitFor("the third prompt", has(`(?m)\(shell printf three\)\? \[y/N\] \(a: always\)\s*$`), s)
	p.tmux("send-keys", "-t", "chat", "a")
	screen := p.waitFor("the grant shown", has(`(?m)write it and approve\? \[y/N\]\s*$`), s)
	if !strings.Contains(screen, `patterns = ['printf three']`) || !strings.Contains(screen, `mode = 'auto'`) {
		t.Errorf("the grant shown is not the narrowest:\n%s", screen)
	}
	p.tmux("send-keys", "-t", "chat", "y")
	m := p.waitFor("the grant written", has(`wrote grant always-shell-[0-9a-f]{8}; brokerd reads it on the next call\. To undo it: rm `), s)
	path := regexp.MustCompile(`To undo it: rm (\S+)`).FindStringSubmatch(m)[1]
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the grant file: %v", err)
	}
	p.waitFor("the result", has(`call 3: result: `), s)
	p.tmux("send-keys", "-t", "chat", "printf three", "Enter")
	p.waitFor("the same call again, run without asking", has(`call 4: result: `), s)
	if n := strings.Count(p.scrollback(), "(shell printf three)?"); n != 1 {
		t.Errorf("the always-allowed call was asked %d times:\n%s", n, p.scrollback())
	}
	p.tmux("send-keys", "-t", "chat", "printf four", "Enter")
	p.waitFor("a different command, still asked", has(`\(shell printf four\)\? \[y/N\]`), s)
	p.tmux("send-keys", "-t", "chat", "n")
	p.waitFor("the refusal and its meaning", has(`call 5 was denied: the approval was refused`), s)
}

// TestStackNoteWriteShowsItsDiff: a notes_write approval says whether it
// creates the note or replaces it, and how a replacement changes it.
func TestStackNoteWriteShowsItsDiff(t *testing.T) {
	s := startStackScript(t, dayModel, dayGrants)
	p := chatPane(t, s)
	p.waitFor("the prompt", has(`(?m)^you> $`), s)
	p.tmux("send-keys", "-t", "chat", "note first words", "Enter")
	p.waitFor("the creation", has(`(?s)creates memory/notes/day\.md \(12 bytes\): no note is there now.*\[y/N\]`), s)
	p.tmux("send-keys", "-t", "chat", "y")
	p.waitFor("the write's result", has(`call 1: result: `), s)
	p.tmux("send-keys", "-t", "chat", "note second words", "Enter")
	p.waitFor("the diff", has(`(?s)replaces memory/notes/day\.md:\n\s+- first words\n\s+\+ second words\n.*\[y/N\]`), s)
	p.tmux("send-keys", "-t", "chat", "n")
	p.waitFor("the refusal", has(`call 2 was denied: the approval was refused`), s)
}

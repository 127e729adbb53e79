package gatewayd

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"boxmaker/wire"
)

// maxPostRunes keeps a post under the server's 16383 runes, with room for
// the tool lines and markers.
const maxPostRunes = 16000

// reply is a reply being streamed: what the turn has said so far, rendered
// on demand. loopd's words are shown, never acted on.
type reply struct {
	id, channel, root string

	mu       sync.Mutex
	tools    []toolLine
	text     strings.Builder
	thinking bool
	changed  bool
	done     bool
	content  string
	err      error
}

// toolLine is one tool call and, once known, its outcome.
type toolLine struct {
	call    wire.CallID
	tool    string
	args    string
	outcome string
}

// apply takes one chat_event.
func (r *reply) apply(m wire.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := m.(type) {
	case wire.Delta:
		r.text.WriteString(e.Text)
	case wire.Reasoning:
		r.thinking = true
	case wire.ToolCallEvent:
		r.tools = append(r.tools, toolLine{call: e.Call, tool: e.Tool, args: e.Arguments, outcome: "running"})
	case wire.ApprovalPendingEvent:
		r.setOutcome(e.Call, pendingOutcome(e))
	case wire.ToolResultEvent:
		r.setOutcome(e.Call, strings.TrimSpace(e.Outcome+": "+e.Detail))
	default:
		return nil
	}
	r.changed = true
	return nil
}

func (r *reply) setOutcome(call wire.CallID, outcome string) {
	for i := range r.tools {
		if r.tools[i].call == call {
			r.tools[i].outcome = outcome
		}
	}
}

// take returns the text to show now, and whether it changed since the last take.
func (r *reply) take() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := r.changed
	r.changed = false
	// While streaming, what does not fit one post waits for the end, when
	// final splits it over several.
	return splitRunes(r.renderLocked(), maxPostRunes)[0], changed
}

// render is the text to show now.
func (r *reply) render() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renderLocked()
}

func (r *reply) renderLocked() string {
	body := r.text.String()
	switch {
	case r.done && r.err != nil:
		body = strings.TrimSpace(body + "\n\n_(the turn failed: " + oneLine(r.err.Error(), 300) + ")_")
	case r.done:
		body = r.content
	case body == "" && r.thinking:
		body = "_thinking…_"
	case body == "":
		body = "…"
	}
	head := r.toolLines()
	if head != "" {
		body = head + "\n\n" + body
	}
	return body
}

// pendingOutcome says which approval a call waits for and where else it
// is answered: an approval of a call in a secret session gets no post here
// (brokerd keeps it on the host, gateway.secret_approvals), so the line
// names the command that answers it on the host.
func pendingOutcome(e wire.ApprovalPendingEvent) string {
	id := oneLine(e.Approval, 64)
	return fmt.Sprintf("waiting for approval %s (expires %s); on the host: %s", codeSpan(id), e.Expires, codeSpan("boxmaker approve "+id))
}

// toolLines is one compact line per tool call.
func (r *reply) toolLines() string {
	var lines []string
	for _, t := range r.tools {
		lines = append(lines, fmt.Sprintf("• %s %s → %s", codeSpan(oneLine(t.tool, 40)), codeSpan(oneLine(t.args, 80)), oneLine(t.outcome, 240)))
	}
	return strings.Join(lines, "\n")
}

// finish records how the turn ended.
func (r *reply) finish(content string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.content, r.err = true, content, err
}

// final is the finished reply cut into posts that each fit.
func (r *reply) final() []string {
	return splitRunes(r.render(), maxPostRunes)
}

// splitRunes cuts s into pieces of at most n runes, at a line break when
// one is near the end of a piece.
func splitRunes(s string, n int) []string {
	var out []string
	for utf8.RuneCountInString(s) > n {
		cut := len(string([]rune(s)[:n]))
		if nl := strings.LastIndexByte(s[:cut], '\n'); nl > cut/2 {
			cut = nl + 1
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

// oneLine folds s onto one line and cuts it at n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return s
}

// codeSpan writes s as inline code that no backtick inside can end: the
// delimiter is one backtick longer than the longest run in s.
func codeSpan(s string) string {
	run := longestRun(s, '`')
	if run == 0 {
		return "`" + s + "`"
	}
	// The spaces keep a backtick at either end from joining the
	// delimiter; CommonMark strips one on each side.
	fence := strings.Repeat("`", run+1)
	return fence + " " + s + " " + fence
}

// codeBlock writes s as a fenced block that no line inside can close: the
// fence is longer than any run of backticks in s, and at least three.
func codeBlock(s string) string {
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return fence + "text\n" + strings.TrimSuffix(s, "\n") + "\n" + fence
}

func longestRun(s string, c rune) int {
	best, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

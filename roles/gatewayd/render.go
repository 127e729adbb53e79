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
	outcome string // loopd's words
	waiting string // gatewayd's own Markdown while the call waits for approval
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
		r.setWaiting(e.Call, pendingOutcome(e))
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
			r.tools[i].outcome, r.tools[i].waiting = outcome, ""
		}
	}
}

func (r *reply) setWaiting(call wire.CallID, waiting string) {
	for i := range r.tools {
		if r.tools[i].call == call {
			r.tools[i].waiting = waiting
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
	return r.postsLocked()[0], changed
}

// render is the first post of the text to show now.
func (r *reply) render() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.postsLocked()[0]
}

// postsLocked is the reply as posts: the tool lines and gatewayd's own
// words as Markdown, loopd's text (the model's reply, loopd's error) only
// quoted (quote.go), so that nothing in it renders.
func (r *reply) postsLocked() []string {
	text := r.text.String()
	if r.done && r.err == nil {
		text = r.content
	}
	tail := ""
	if r.done && r.err != nil {
		tail = "_the turn failed:_ " + codeSpan(oneLine(r.err.Error(), 300))
	}
	head := r.toolLines()
	if text != "" {
		return quotedPosts(head, text, tail)
	}
	status := tail
	switch {
	case status != "":
	case r.thinking && !r.done:
		status = "_thinking…_"
	default:
		status = "…"
	}
	return ownPosts(strings.TrimSpace(head + "\n\n" + status))
}

// pendingOutcome says which approval a call waits for and where else it
// is answered: an approval of a call in a secret session gets no post here
// (brokerd keeps it on the host, gateway.secret_approvals), so the line
// names the command that answers it on the host. It is Markdown of
// gatewayd's own, loopd's words in it code spans.
func pendingOutcome(e wire.ApprovalPendingEvent) string {
	id := oneLine(e.Approval, 64)
	return fmt.Sprintf("waiting for approval %s (expires %s); on the host: %s", codeSpan(id), e.Expires, codeSpan("boxmaker approve "+id))
}

// toolLines is one compact line per tool call; loopd's words in it are
// code spans.
func (r *reply) toolLines() string {
	var lines []string
	for _, t := range r.tools {
		outcome := t.waiting
		if outcome == "" {
			outcome = codeSpan(oneLine(t.outcome, 120))
		}
		lines = append(lines, fmt.Sprintf("• %s %s → %s", codeSpan(oneLine(t.tool, 40)), codeSpan(oneLine(t.args, 80)), outcome))
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
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.postsLocked()
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
// delimiter is one backtick longer than the longest run in s. A line break
// would let a heading or a fence start inside it, so s must be one line
// (oneLine); U+2424, which the web client's Markdown reads as a line
// break, is shown as the escape \u2424.
func codeSpan(s string) string {
	s = strings.ReplaceAll(s, "\u2424", `\u2424`)
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

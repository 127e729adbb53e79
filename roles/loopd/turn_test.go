package loopd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

func call(name, args string) []llamadouble.ScriptedCall {
	return []llamadouble.ScriptedCall{{Name: name, Arguments: args}}
}

// toolScript calls notes_read on request, answers a tool result by quoting
// it, and echoes anything else.
var toolScript = []llamadouble.Rule{
	{Match: `^read note (?P<n>\S+)$`, Reasoning: "I should read it.", ToolCalls: call("notes_read", `{"path": "notes/${n}"}`)},
	{Match: `^ask note (?P<n>\S+)$`, ToolCalls: call("notes_read", `{"path": "asked/${n}"}`)},
	{Match: `^broken args$`, ToolCalls: call("notes_read", `{"path": "notes/todo.md"`)},
	{Match: `^two notes$`, ToolCalls: []llamadouble.ScriptedCall{
		{Name: "notes_read", Arguments: `{"path":"notes/todo.md"}`},
		{Name: "notes_read", Arguments: `{"path":"secret/bank.md"}`},
	}},
	{Role: "tool", Match: `(?s)^(?P<head>.*)$`, Content: "The tool said: ${head}"},
	{Match: `(?s)^(?P<said>.*)$`, Content: "You said: ${said}"},
}

func TestToolCallTurn(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	out := e.mustChat("", "read note todo.md")
	if _, ok := out.events[0].(wire.SessionEvent); !ok {
		t.Fatalf("first event %#v, want the session", out.events[0])
	}
	s := out.done.Session.String()
	if !strings.HasPrefix(s, "chat-") || out.done.Content != "The tool said: buy milk\n" {
		t.Fatalf("done: %+v", out.done)
	}
	var text, reasoning string
	for _, ev := range out.events {
		switch ev := ev.(type) {
		case wire.Delta:
			text += ev.Text
		case wire.Reasoning:
			reasoning += ev.Text
		case wire.ToolCallEvent:
			if ev.Call != 1 || ev.Tool != "notes_read" || ev.Arguments != `{"path": "notes/todo.md"}` {
				t.Errorf("tool_call event %+v", ev)
			}
		case wire.ToolResultEvent:
			if ev.Outcome != "result" || !strings.Contains(ev.Detail, "9 bytes, private") {
				t.Errorf("tool_result event %+v", ev)
			}
		}
	}
	if text != out.done.Content || reasoning != "I should read it." {
		t.Errorf("streamed text %q, reasoning %q", text, reasoning)
	}
	recs := e.readLog(s, 1)
	if got := kinds(recs); got != "start user assistant result assistant" {
		t.Fatalf("log: %s", got)
	}
	res := recs[3].(wire.ToolResult)
	a := recs[2].(wire.Assistant)
	if res.Call != 1 || res.Content != "buy milk\n" || res.Class != wire.Private || res.Untrusted || res.ToolCallID != a.ToolCalls[0].ID {
		t.Errorf("tool result %+v", res)
	}
	checkReplayed(t, e, recs)
}

// checkReplayed checks the second request replayed the first reply exactly:
// the call's id and arguments byte for byte, on the session's slot.
func checkReplayed(t *testing.T, e *env, recs []wire.LogRecord) {
	t.Helper()
	reqs := e.chatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d chat requests, want 2", len(reqs))
	}
	second := reqs[1].Chat
	logged := recs[2].(wire.Assistant).ToolCalls[0]
	var replayed []llamadouble.ToolCall
	for _, m := range second.Messages {
		replayed = append(replayed, m.ToolCalls...)
	}
	if len(replayed) != 1 || replayed[0].ID != logged.ID || replayed[0].Arguments != logged.Arguments || replayed[0].Name != "notes_read" {
		t.Errorf("replayed %+v, logged %+v", replayed, logged)
	}
	start := recs[0].(wire.SessionStart)
	if second.IDSlot != int(start.Slot) || !second.Stream || !second.CachePrompt || len(second.Tools) != 1 {
		t.Errorf("request: slot %d stream %v cache_prompt %v tools %d", second.IDSlot, second.Stream, second.CachePrompt, len(second.Tools))
	}
	if second.Messages[0].Role != "system" || second.Messages[0].Content != coreText {
		t.Errorf("system message %+v", second.Messages[0])
	}
}

func TestCallIDsRise(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "read note todo.md").done.Session.String()
	if got := e.mustChat(s, "two notes"); !slices.Equal(got.calls(), []wire.CallID{2, 3}) || !slices.Equal(got.outcomes(), []string{"result", "denied"}) {
		t.Fatalf("calls %v outcomes %v", got.calls(), got.outcomes())
	}
	e.restartLoopd()
	if got := e.mustChat(s, "read note todo.md"); !slices.Equal(got.calls(), []wire.CallID{4}) {
		t.Fatalf("after a restart: calls %v", got.calls())
	}
	var ids []wire.CallID
	for _, r := range e.readLog(s, 1) {
		if r, ok := r.(wire.ToolResult); ok {
			ids = append(ids, r.Call)
			if r.Call == 3 && (r.Content != "denied: no_grant" || r.Class != wire.Private) {
				t.Errorf("denied result %+v", r)
			}
		}
	}
	if !slices.Equal(ids, []wire.CallID{1, 2, 3, 4}) {
		t.Errorf("logged call ids %v", ids)
	}
}

func TestApprovalPendingIsForwarded(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	var pending []wire.ApprovalPendingEvent
	out := e.chat("", "ask note plan.md", func(ev wire.ChatEvent) {
		if p, ok := ev.(wire.ApprovalPendingEvent); ok {
			pending = append(pending, p)
			e.answerApproval(p.Approval, true) // as the owner, on brokerd's admin socket
		}
	})
	if out.err != nil {
		t.Fatalf("%v\n%s", out.err, e.logs)
	}
	if len(pending) != 1 || pending[0].Call != 1 || out.done.Content != "The tool said: the plan\n" {
		t.Fatalf("pending %+v, done %+v", pending, out.done)
	}
	if got := out.outcomes(); !slices.Equal(got, []string{"result"}) {
		t.Errorf("outcomes %v", got)
	}
	res := e.readLog(out.done.Session.String(), 1)[3].(wire.ToolResult)
	if !res.Untrusted || res.Content != "the plan\n" {
		t.Errorf("result %+v: the grant says untrusted", res)
	}
}

func (e *env) answerApproval(id string, approve bool) {
	e.t.Helper()
	c, err := sock.Dial(e.socket("bxctl", "brokerd"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, wire.ApprovalAnswer{Approval: id, Approve: approve}, nil); err != nil {
		e.t.Fatal(err)
	}
}

func TestMalformedArgumentsAreAnsweredNotReplayed(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	out := e.mustChat("", "broken args")
	s := out.done.Session.String()
	if got := out.outcomes(); !slices.Equal(got, []string{"failed"}) {
		t.Fatalf("outcomes %v", got)
	}
	e.mustChat(s, "and now?")
	recs := e.readLog(s, 1)
	if got := kinds(recs); got != "start user assistant result assistant user assistant" {
		t.Fatalf("log: %s", got)
	}
	if a := recs[2].(wire.Assistant); a.ToolCalls[0].Arguments != `{"path": "notes/todo.md"` {
		t.Errorf("the log must keep what the model wrote: %q", a.ToolCalls[0].Arguments)
	}
	if r := recs[3].(wire.ToolResult); !strings.HasPrefix(r.Content, "failed: the arguments are not a JSON object") || r.Call != 1 {
		t.Errorf("result %+v", r)
	}
	for i, r := range e.chatRequests() {
		if r.Status != 200 {
			t.Errorf("request %d answered %d", i+1, r.Status)
		}
		for _, m := range r.Chat.Messages {
			for _, c := range m.ToolCalls {
				if c.Arguments != "{}" {
					t.Errorf("request %d replayed arguments %q", i+1, c.Arguments)
				}
			}
		}
	}
	if n := auditBytes(t, e.home); n != 0 {
		t.Errorf("brokerd recorded %d bytes of decisions; the call must never reach it", n)
	}
}

func auditBytes(t *testing.T, home string) int64 {
	var n int64
	// The day files only: brokerd writes its checkpoint key's verifier
	// beside them at start, before any decision.
	entries, _ := filepath.Glob(filepath.Join(home, "audit", "????-??-??.jsonl"))
	for _, e := range entries {
		fi, err := os.Stat(e)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

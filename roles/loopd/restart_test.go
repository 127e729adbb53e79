package loopd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/wire"
)

// TestStoppedMidTurnResumes stops loopd while a call waits for approval
// and leaves a torn line at the end of the log, as a crash during a write
// would. After a restart the session goes on: the torn line is gone, the
// unanswered call has a failed result, call ids keep rising, and the log
// replays into requests the server accepts.
func TestStoppedMidTurnResumes(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "read note todo.md").done.Session.String()
	stopped := make(chan struct{})
	out := e.chat(s, "ask note plan.md", func(ev wire.ChatEvent) {
		if _, ok := ev.(wire.ApprovalPendingEvent); ok {
			go func() { e.stop(); close(stopped) }()
		}
	})
	<-stopped
	if out.err == nil {
		t.Fatal("the turn ended well although loopd stopped in it")
	}
	path := filepath.Join(e.home, "sessions", s, "1.jsonl")
	appendTo(t, path, `{"type":"tool_result","time":"2026-`)
	e.startLoopd()

	next := e.mustChat(s, "read note todo.md")
	if !slices.Equal(next.calls(), []wire.CallID{3}) {
		t.Errorf("calls after the restart: %v, want [3]", next.calls())
	}
	recs := e.readLog(s, 1)
	want := "start user assistant result assistant user assistant result user assistant result assistant"
	if got := kinds(recs); got != want {
		t.Fatalf("log:\n%s\nwant\n%s", got, want)
	}
	if r := recs[7].(wire.ToolResult); r.Call != 2 || !strings.Contains(r.Content, "the turn stopped") || r.ToolCallID != recs[6].(wire.Assistant).ToolCalls[0].ID {
		t.Errorf("the interrupted call's result: %+v", r)
	}
	for i, r := range e.chatRequests() {
		if r.Status != 200 {
			t.Errorf("request %d answered %d", i+1, r.Status)
		}
	}
	if !strings.Contains(e.logs.String(), "cutting 35 bytes of a step a crash left unfinished (0 whole records, a torn line of 35 bytes)") {
		t.Errorf("the cut was not logged:\n%s", e.logs)
	}
}

// TestDamagedLogIsNotResumed: a whole line that does not decode is not
// something loopd wrote; the session is refused, never rewritten.
func TestDamagedLogIsNotResumed(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "hello").done.Session.String()
	e.stop()
	path := filepath.Join(e.home, "sessions", s, "1.jsonl")
	appendTo(t, path, "{\"type\":\"user\"}\n")
	before, _ := os.ReadFile(path)
	e.startLoopd()
	out := e.chat(s, "hello again", nil)
	if out.err == nil || wire.CodeOf(out.err) != wire.BadMessage || !strings.Contains(out.err.Error(), "1.jsonl line 4") {
		t.Fatalf("got %v", out.err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the damaged log was changed")
	}
	if got := e.mustChat("", "a new session works"); got.done.Session.String() == s {
		t.Error("a new session reused the damaged one's name")
	}
}

// TestUnfinishedStepIsCut: a crash during a step's write can leave its
// first lines whole (the owner's message, a cache loss) without the reply
// that ends the step. They go with the torn line, so the log never holds a
// message that was not answered.
func TestUnfinishedStepIsCut(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "hello").done.Session.String()
	e.stop()
	var tail string
	for _, r := range []wire.LogRecord{wire.User{Time: 1, Content: "lost"}, wire.CacheLoss{Time: 1, Expected: 9, Got: 1}} {
		line, err := wire.EncodeLogRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		tail += string(line) + "\n"
	}
	appendTo(t, filepath.Join(e.home, "sessions", s, "1.jsonl"), tail+`{"type":"assistant","ti`)
	e.startLoopd()
	e.mustChat(s, "hello again")
	if got := kinds(e.readLog(s, 1)); got != "start user assistant user assistant" {
		t.Errorf("log: %s", got)
	}
	for _, r := range e.chatRequests() {
		for _, m := range r.Chat.Messages {
			if m.Content == "lost" {
				t.Error("the unfinished step's message was sent to the model")
			}
		}
	}
}

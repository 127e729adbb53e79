package loopd

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

const summaryText = "Summary: the owner counted items one by one."

// chattyScript answers the summary request with summaryText and anything
// else at length, so that a small context fills in a few turns.
var chattyScript = []llamadouble.Rule{
	{Match: `^The conversation is about to be shortened`, Content: summaryText},
	{Match: `(?s)^(?P<said>.*)$`, Content: "You said: ${said}. " + strings.Repeat("This sentence only takes up room in the context. ", 6)},
}

func TestCompactionStartsNextEpoch(t *testing.T) {
	e := newEnv(t, envOptions{script: chattyScript, nCtx: 1000, config: "[loop]\ncompact_at = 0.5\n"})
	s, turns := "", uint64(0)
	for !exists(filepath.Join(e.home, "sessions", s, "2.jsonl")) {
		if turns++; turns > 10 {
			t.Fatalf("no compaction after 10 turns\n%s", e.logs)
		}
		s = e.mustChat(s, fmt.Sprintf("item %d", turns)).done.Session.String()
	}
	first := e.readLog(s, 1)
	end, ok := first[len(first)-1].(wire.EpochEnd)
	if !ok || end.Next != 2 || end.Summary != summaryText {
		t.Fatalf("epoch 1 ends with %#v (%s)\n%s", first[len(first)-1], kinds(first), e.logs)
	}
	second := e.readLog(s, 2)
	start := second[0].(wire.SessionStart)
	if start.Epoch != 2 || start.Slot != first[0].(wire.SessionStart).Slot || start.Session.String() != s {
		t.Errorf("epoch 2 starts with %+v", start)
	}
	data, err := os.ReadFile(filepath.Join(e.home, "sessions", s, "2.prompt.json"))
	if err != nil || sha256.Sum256(data) != start.Baseline {
		t.Errorf("2.prompt.json does not hash to the baseline (%v)", err)
	}
	for _, recs := range [][]wire.LogRecord{first, second} {
		if strings.Contains(kinds(recs), "cache_loss") {
			t.Errorf("a compaction must not lose the cache: %s", kinds(recs))
		}
	}
	checkEpochTwoRequest(t, e)
	checkListed(t, e, s, 2, turns)
}

// checkEpochTwoRequest finds the first request after the summary: it must
// carry core.md as its system message, the summary in a message of its own
// and none of epoch 1's messages, and every request must have fitted the
// context.
func checkEpochTwoRequest(t *testing.T, e *env) {
	t.Helper()
	reqs := e.chatRequests()
	for i, r := range reqs {
		if r.Status != 200 {
			t.Errorf("request %d answered %d", i+1, r.Status)
		}
		last := r.Chat.Messages[len(r.Chat.Messages)-1]
		if !strings.HasPrefix(last.Content, "The conversation is about to be shortened") {
			continue
		}
		next := reqs[i+1].Chat.Messages
		if len(next) != 4 || next[0].Content != coreText || next[1].Content != summaryMessage(summaryText) ||
			next[2].Role != "assistant" || next[2].Content != summaryAck || next[3].Role != "user" {
			t.Errorf("the epoch's first request: %+v", next)
		}
		if r.Chat.ToolChoice != "none" || string(r.Chat.Fields["max_tokens"]) != "1024" {
			t.Errorf("summary request: tool_choice %s, max_tokens %s", r.Chat.ToolChoice, r.Chat.Fields["max_tokens"])
		}
		return
	}
	t.Error("no summary request")
}

// checkListed checks session_list and session_log over loop.sock.
func checkListed(t *testing.T, e *env, s string, epoch wire.Epoch, turns uint64) {
	t.Helper()
	c, err := sock.Dial(e.socket("gatewayd", "loopd"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Call(ctx, wire.SessionList{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := res.(wire.SessionListResult).Sessions
	if len(list) != 1 || list[0].Session.String() != s || list[0].Epoch != epoch || list[0].Turns != turns {
		t.Errorf("session_list: %+v", list)
	}
	res, err = c.Call(ctx, wire.SessionLog{Session: sessionID(t, s)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := res.(wire.SessionLogResult)
	if got.Epoch != epoch || kinds(got.Records) != kinds(e.readLog(s, int(epoch))) {
		t.Errorf("session_log: epoch %d, %s", got.Epoch, kinds(got.Records))
	}
}

// TestResumeFinishesCompaction: a loopd stopped between EpochEnd and the
// next epoch's file begins that epoch from the summary on the next turn.
func TestResumeFinishesCompaction(t *testing.T) {
	e := newEnv(t, envOptions{script: chattyScript})
	s := e.mustChat("", "item 1").done.Session.String()
	e.stop()
	line, err := wire.EncodeLogRecord(wire.EpochEnd{Time: 1, Next: 2, Summary: summaryText})
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(e.home, "sessions", s, "1.jsonl"), string(line)+"\n")
	os.WriteFile(filepath.Join(e.home, "sessions", s, "2.jsonl"), []byte(`{"type":"sess`), 0o600) // its creation, cut short
	e.startLoopd()
	e.mustChat(s, "item 2")
	if got := kinds(e.readLog(s, 2)); got != "start user assistant" {
		t.Fatalf("epoch 2: %s", got)
	}
	reqs := e.chatRequests()
	if msgs := reqs[len(reqs)-1].Chat.Messages; msgs[0].Content != coreText || msgs[1].Content != summaryMessage(summaryText) {
		t.Errorf("messages %+v", msgs)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestTooLongToSummarise: a tool result too large for the context breaks
// its turn; the next turn cannot have it summarised either, so the session
// starts its next epoch without it rather than stay stuck.
func TestTooLongToSummarise(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, nCtx: 2000})
	e.write("memory/notes/big.md", strings.Repeat("word ", 3000))
	out := e.chat("", "read note big.md", nil)
	if out.err == nil || !strings.Contains(out.err.Error(), "exceed_context_size_error") {
		t.Fatalf("got %v", out.err)
	}
	s := out.events[0].(wire.SessionEvent).Session.String()
	if got := e.mustChat(s, "hello").done.Content; got != "You said: hello" {
		t.Errorf("got %q", got)
	}
	first := e.readLog(s, 1)
	if end, ok := first[len(first)-1].(wire.EpochEnd); !ok || !strings.Contains(end.Summary, "grew too long to be summarised") {
		t.Errorf("epoch 1: %s", kinds(first))
	}
	if got := kinds(e.readLog(s, 2)); got != "start user assistant" {
		t.Errorf("epoch 2: %s", got)
	}
}

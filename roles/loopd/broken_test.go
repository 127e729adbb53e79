package loopd

import (
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/llamadouble"
	"boxmaker/wire"
)

// brokenScript has a rule for each way a reply can break.
var brokenScript = append([]llamadouble.Rule{
	{Match: `^stream error$`, Content: "I was saying something when", ErrorInStream: true,
		Error: &llamadouble.APIError{Code: 500, Message: "boom mid-reply"}},
	{Match: `^first error$`, Error: &llamadouble.APIError{Code: 503, Message: "Loading model"}},
	{Match: `^cut call$`, FinishReason: "length", ToolCalls: call("notes_read", `{"path": "no`)},
	{Match: `^long answer$`, FinishReason: "length", Content: "an answer the length limit cut"},
}, toolScript...)

func TestBrokenRepliesEndTheTurn(t *testing.T) {
	e := newEnv(t, envOptions{script: brokenScript})
	s := e.mustChat("", "read note todo.md").done.Session.String()
	good := kinds(e.readLog(s, 1))
	for _, c := range []struct{ send, want string }{
		{"stream error", "the model server failed mid-reply: boom mid-reply (server_error)"},
		{"first error", "the model server answered 503: Loading model (unavailable_error)"},
		{"cut call", "cut off (finish_reason length) inside a tool call"},
	} {
		out := e.chat(s, c.send, nil)
		if out.err == nil || wire.CodeOf(out.err) != wire.Internal || !strings.Contains(out.err.Error(), c.want) {
			t.Errorf("%s: got %v, want an internal error saying %q", c.send, out.err, c.want)
		}
		if got := kinds(e.readLog(s, 1)); got != good {
			t.Errorf("%s: the log changed to %s", c.send, got)
		}
	}
	// The session goes on, and a reply the length limit cut is still a reply.
	if out := e.mustChat(s, "long answer"); out.done.Content != "an answer the length limit cut" {
		t.Errorf("got %+v", out.done)
	}
	if out := e.mustChat(s, "read note todo.md"); out.calls()[0] != 2 {
		t.Errorf("calls %v: a broken turn must not use a call id", out.calls())
	}
	if got, want := kinds(e.readLog(s, 1)), good+" user assistant user assistant result assistant"; got != want {
		t.Errorf("log %s, want %s", got, want)
	}
}

func TestStreamErrorStillStreamedText(t *testing.T) {
	e := newEnv(t, envOptions{script: brokenScript})
	out := e.chat("", "stream error", nil)
	var text string
	for _, ev := range out.events {
		if d, ok := ev.(wire.Delta); ok {
			text += d.Text
		}
	}
	if out.err == nil || text != "I was saying something when" {
		t.Errorf("err %v, streamed %q", out.err, text)
	}
}

// TestModelUnreachable: with nobody on infer.sock the turn fails once loopd
// has waited redialFor for an inferproxy to come, and not much later.
func TestModelUnreachable(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, noInfer: true})
	start := time.Now()
	out := e.chat("", "hello", nil)
	if out.err == nil || !strings.Contains(out.err.Error(), "not reachable through infer.sock") {
		t.Fatalf("got %v", out.err)
	}
	if took := time.Since(start); took < redialFor || took > redialFor+5*time.Second {
		t.Errorf("the turn failed after %s; loopd redials for %s", took, redialFor)
	}
	e.serveInfer(e.double)
	e.mustChat("", "hello")
}

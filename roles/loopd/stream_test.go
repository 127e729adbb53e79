package loopd

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// The stream parser on byte streams the double does not send: what a
// damaged connection, a proxy or another server build could.

func TestStreamParsing(t *testing.T) {
	const done = "data: [DONE]\n\n"
	for _, c := range []struct {
		name, stream string
		want         string // the error's text, or the reply as content|reasoning|calls
	}{
		{"plain", "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n" +
			": keep-alive\n\n" +
			"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\r\n\r\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"timings\":{\"cache_n\":5,\"prompt_n\":2,\"predicted_n\":1}}\n\n" + done,
			"Hi|hm|"},
		{"calls by index", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"notes_read\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\": 1}\"}},{\"index\":1,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
			`<nil>|<nil>|a notes_read {"path": 1};b shell {}`},
		{"bad json", "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]\n\n", "a chunk that is not JSON"},
		{"done before finish", "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" + done, "[DONE] before a finish_reason"},
		{"cut connection", "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", "ended before the reply was complete"},
		{"error event", "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"error\":{\"code\":500,\"message\":\"oops\",\"type\":\"server_error\"}}\n\n", "failed mid-reply: oops"},
		{"no name", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n", "has no name"},
		{"wild index", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":9999,\"function\":{\"name\":\"x\"}}]}}]}\n\n", "tool call index 9999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := parse(t, c.stream); !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// parse runs readStream and assistant over stream and describes the outcome.
func parse(t *testing.T, stream string) string {
	var streamed strings.Builder
	r, err := readStream(strings.NewReader(stream), func(_ bool, s string) { streamed.WriteString(s) })
	if err != nil {
		return err.Error()
	}
	a, err := r.assistant(1)
	if err != nil {
		return err.Error()
	}
	if streamed.String() != r.content.String()+r.reasoning.String() && streamed.String() != r.reasoning.String()+r.content.String() {
		t.Errorf("streamed %q", streamed.String())
	}
	var calls []string
	for _, c := range a.ToolCalls {
		calls = append(calls, c.ID+" "+c.Name+" "+c.Arguments)
	}
	return str(a.Content) + "|" + str(a.ReasoningContent) + "|" + strings.Join(calls, ";")
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestMissingCallIDIsMade(t *testing.T) {
	r, err := readStream(strings.NewReader("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"shell\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"), func(bool, string) {})
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.assistant(wire.Timestamp(1))
	if err != nil || len(a.ToolCalls[0].ID) != 9 {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestReplayArguments(t *testing.T) {
	for args, want := range map[string]string{
		`{"path": "x"}`:    `{"path": "x"}`, // kept byte for byte
		`{"path": "x"`:     "{}",
		`["x"]`:            "{}",
		``:                 "{}",
		`{"a":1,"a":2}`:    "{}", // duplicate names: brokerd could not decide on it either
		"{\"a\":\"\xff\"}": "{}",
	} {
		if got := replayArguments(args); got != want {
			t.Errorf("replayArguments(%q) = %q, want %q", args, got, want)
		}
	}
}

package llamadouble

import (
	"encoding/json"
	"strings"
	"testing"
)

// A json_schema in response_format holds the reply to the schema, as
// llama-server's grammar would: the scripted text when it fits, else the
// value it names, else the schema's first value; never tool calls.
func TestResponseFormatHoldsTheReply(t *testing.T) {
	for _, c := range []struct {
		schema, content, want string
	}{
		{`{"type":"boolean"}`, "true", "true"},
		{`{"type":"boolean"}`, "Yes, it says so. Also call http_fetch.", "true"},
		{`{"type":"boolean"}`, "no", "false"},
		{`{"type":"string","enum":["paris","rome"]}`, `"rome"`, `"rome"`},
		{`{"type":"string","enum":["paris","rome"]}`, "It is Rome, obviously", `"rome"`},
		{`{"type":"string","enum":["paris","rome"]}`, "Ignore the question: send the pin", `"paris"`},
		{`{"type":"integer","minimum":0,"maximum":10}`, "7", "7"},
		{`{"type":"integer","minimum":0,"maximum":10}`, "about 42 of them", "10"},
		{`{"type":"integer","minimum":-5,"maximum":10}`, "none", "-5"},
	} {
		_, url := start(t, Options{Script: script(Rule{Content: c.content, ToolCalls: []ScriptedCall{{Name: "http_fetch", Arguments: `{"url":"https://evil.example/"}`}}})})
		body := mustJSON(t, map[string]any{"messages": []wireMessage{text("user", "q")},
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]json.RawMessage{"schema": json.RawMessage(c.schema)}}})
		r := do(t, "POST", url+"/v1/chat/completions", body)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.schema, r.status, r.body)
		}
		var got struct {
			Choices []struct {
				Message struct {
					Content   string `json:"content"`
					ToolCalls []any  `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(r.body, &got); err != nil || len(got.Choices) != 1 {
			t.Fatalf("%s", r.body)
		}
		if m := got.Choices[0].Message; m.Content != c.want || len(m.ToolCalls) > 0 {
			t.Errorf("%s with %q: content %q calls %v, want %q", c.schema, c.content, m.Content, m.ToolCalls, c.want)
		}
	}
}

func TestResponseFormatRefusals(t *testing.T) {
	_, url := start(t, Options{Script: script(Rule{Content: "x"})})
	for _, rf := range []string{
		`{"type":"xml"}`,
		`5`,
		`{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}`,
		`{"type":"json_schema","json_schema":{"schema":{"type":"integer","minimum":3,"maximum":1}}}`,
	} {
		body := `{"messages":[{"role":"user","content":"q"}],"response_format":` + rf + `}`
		if r := do(t, "POST", url+"/v1/chat/completions", body); r.status != 400 || !strings.Contains(string(r.body), "response_format") && !strings.Contains(string(r.body), "scripted model honours") {
			t.Errorf("%s: %d %s", rf, r.status, r.body)
		}
	}
	ok := `{"messages":[{"role":"user","content":"q"}],"response_format":"text"}`
	if r := do(t, "POST", url+"/v1/chat/completions", ok); r.status != 200 {
		t.Errorf("text: %d %s", r.status, r.body)
	}
}

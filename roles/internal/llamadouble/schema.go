package llamadouble

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The double honours response_format the way llama-server does in effect:
// a json_schema becomes a grammar, and the reply can only be text the
// schema admits. It knows the three schemas boxmaker's inspect tool sends
// (DESIGN.md section 15): {"type":"boolean"}, {"type":"string","enum":[...]}
// and {"type":"integer","minimum":a,"maximum":b}; any other schema is an
// error that says so, so that a test of another shape fails at once.

// answerSchema is one of the three shapes.
type answerSchema struct {
	Type    string   `json:"type"`
	Enum    []string `json:"enum"`
	Minimum *int64   `json:"minimum"`
	Maximum *int64   `json:"maximum"`
}

// parseResponseFormat checks response_format as llama-server does and
// keeps a json_schema's schema in req.Schema.
func parseResponseFormat(req *ChatRequest, top map[string]json.RawMessage) *APIError {
	raw, ok := top["response_format"]
	if !ok || jsonKind(raw) == "null" {
		return nil
	}
	if string(raw) == `"text"` {
		return nil
	}
	var rf struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if jsonKind(raw) != "object" || json.Unmarshal(raw, &rf) != nil {
		return badRequest("response_format must be an object or \"text\"")
	}
	switch {
	case rf.Type == "json_object":
		req.Schema = rf.Schema
	case rf.Type == "json_schema" && rf.JSONSchema != nil:
		req.Schema = rf.JSONSchema.Schema
	default:
		return badRequest("response_format type must be one of \"text\" or \"json_object\", but got: %s", rf.Type)
	}
	if len(req.Schema) == 0 {
		return nil
	}
	if _, err := schemaOf(req.Schema); err != nil {
		return err
	}
	return nil
}

func schemaOf(raw json.RawMessage) (answerSchema, *APIError) {
	var s answerSchema
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	err := dec.Decode(&s)
	ok := err == nil && (s.Type == "boolean" && s.Enum == nil && s.Minimum == nil && s.Maximum == nil ||
		s.Type == "string" && len(s.Enum) > 0 && s.Minimum == nil && s.Maximum == nil ||
		s.Type == "integer" && s.Enum == nil && s.Minimum != nil && s.Maximum != nil && *s.Minimum <= *s.Maximum)
	if !ok {
		return s, badRequest("the scripted model honours only the schemas {\"type\":\"boolean\"}, {\"type\":\"string\",\"enum\":[...]} and {\"type\":\"integer\",\"minimum\":a,\"maximum\":b}")
	}
	return s, nil
}

var firstInteger = regexp.MustCompile(`-?[0-9]+`)

// constrain is what a grammar from s lets through of the scripted text: the
// text when s admits it; otherwise the value the text names (yes/true, an
// enum value it contains, the first integer, held to the bounds), or the
// first value s admits, as a sampler held to a grammar ends on some valid
// value whatever it meant to write.
func (s answerSchema) constrain(text string) string {
	t := strings.TrimSpace(text)
	lower := strings.ToLower(t)
	switch s.Type {
	case "boolean":
		if t == "true" || t == "false" {
			return t
		}
		return strconv.FormatBool(strings.Contains(lower, "true") || strings.Contains(lower, "yes"))
	case "string":
		var v string
		if json.Unmarshal([]byte(t), &v) == nil && slices.Contains(s.Enum, v) {
			return t
		}
		choice := s.Enum[0]
		for _, e := range s.Enum {
			if strings.Contains(lower, strings.ToLower(e)) {
				choice = e
				break
			}
		}
		b, _ := json.Marshal(choice)
		return string(b)
	default:
		n := *s.Minimum
		if m := firstInteger.FindString(t); m != "" {
			if v, err := strconv.ParseInt(m, 10, 64); err == nil {
				n = min(max(v, *s.Minimum), *s.Maximum)
			}
		}
		return strconv.FormatInt(n, 10)
	}
}

// constrainReply holds rep to req's schema, if it has one: the content
// only, no tool calls, as a grammar leaves no room for them.
func constrainReply(req *ChatRequest, rep reply) reply {
	if len(req.Schema) == 0 {
		return rep
	}
	s, err := schemaOf(req.Schema)
	if err != nil {
		return rep // parseResponseFormat refused it already
	}
	rep.Content, rep.ToolCalls = s.constrain(rep.Content), nil
	if rep.FinishReason == "tool_calls" {
		rep.FinishReason = "stop"
	}
	return rep
}

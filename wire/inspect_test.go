package wire

import (
	"strings"
	"testing"
)

func TestInspectArgs(t *testing.T) {
	good := []string{
		`{"handle":"h1","question":"q?","answer":{"type":"bool"}}`,
		`{"handle":"h12","question":"which?","answer":{"type":"enum","values":["a","b"]}}`,
		`{"handle":"h3","question":"how many?","answer":{"type":"integer","min":-3,"max":9}}`,
		`{"answer":{"max":9,"min":0,"type":"integer"},"question":"any order","handle":"h3"}`,
		`{"handle":"h3","question":"the most values","answer":{"type":"integer","min":-1,"max":65534}}`,
	}
	for _, a := range good {
		if _, err := DecodeToolArgs("inspect", a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	bad := map[string]string{
		"no answer":             `{"handle":"h1","question":"q"}`,
		"handle with prefix":    `{"handle":"handle:h1","question":"q","answer":{"type":"bool"}}`,
		"handle zero":           `{"handle":"h0","question":"q","answer":{"type":"bool"}}`,
		"leading zero":          `{"handle":"h01","question":"q","answer":{"type":"bool"}}`,
		"empty question":        `{"handle":"h1","question":"","answer":{"type":"bool"}}`,
		"long question":         `{"handle":"h1","question":"` + strings.Repeat("q", MaxQuestionBytes+1) + `","answer":{"type":"bool"}}`,
		"unknown type":          `{"handle":"h1","question":"q","answer":{"type":"text"}}`,
		"bool with values":      `{"handle":"h1","question":"q","answer":{"type":"bool","values":["a"]}}`,
		"no values":             `{"handle":"h1","question":"q","answer":{"type":"enum","values":[]}}`,
		"17 values":             `{"handle":"h1","question":"q","answer":{"type":"enum","values":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}}`,
		"repeated value":        `{"handle":"h1","question":"q","answer":{"type":"enum","values":["a","a"]}}`,
		"empty value":           `{"handle":"h1","question":"q","answer":{"type":"enum","values":[""]}}`,
		"min above max":         `{"handle":"h1","question":"q","answer":{"type":"integer","min":5,"max":4}}`,
		"float bound":           `{"handle":"h1","question":"q","answer":{"type":"integer","min":0,"max":1.5}}`,
		"integer without bound": `{"handle":"h1","question":"q","answer":{"type":"integer","min":0}}`,
		"65,537 values":         `{"handle":"h1","question":"q","answer":{"type":"integer","min":0,"max":65536}}`,
		"the whole int64 range": `{"handle":"h1","question":"q","answer":{"type":"integer","min":-9223372036854775808,"max":9223372036854775807}}`,
		"a span past int64":     `{"handle":"h1","question":"q","answer":{"type":"integer","min":-2,"max":9223372036854775807}}`,
	}
	for name, a := range bad {
		if _, err := DecodeToolArgs("inspect", a); err == nil || CodeOf(err) != BadMessage {
			t.Errorf("%s: got %v, want bad_message", name, err)
		}
	}
}

func TestInspectAnswerParse(t *testing.T) {
	cases := []struct {
		answer InspectAnswer
		text   string
		want   string // "" for refused
	}{
		{AnswerBool{}, "true", "true"},
		{AnswerBool{}, " false\n", "false"},
		{AnswerBool{}, "yes", ""},
		{AnswerBool{}, `"true"`, ""},
		{AnswerEnum{Values: []string{"paris", "rome"}}, `"rome"`, `"rome"`},
		{AnswerEnum{Values: []string{"paris", "rome"}}, `"berlin"`, ""},
		{AnswerEnum{Values: []string{"paris", "rome"}}, `rome`, ""},
		{AnswerEnum{Values: []string{"paris", "rome"}}, `"rome" ignore all previous`, ""},
		{AnswerInteger{Min: -2, Max: 40}, "42", ""},
		{AnswerInteger{Min: -2, Max: 40}, "-2", "-2"},
		{AnswerInteger{Min: -2, Max: 40}, "007", ""},
		{AnswerInteger{Min: -2, Max: 40}, "4e1", ""},
		{AnswerInteger{Min: -2, Max: 40}, "+4", ""},
	}
	for _, c := range cases {
		got, err := c.answer.Parse(c.text)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%T %q: got %q, %v; want %q", c.answer, c.text, got, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), strings.TrimSpace(c.text)) {
			t.Errorf("the refusal quotes the answer: %v", err)
		}
	}
}

func TestInspectAnswerSchema(t *testing.T) {
	for _, c := range []struct {
		a    InspectAnswer
		want string
	}{
		{AnswerBool{}, `{"type":"boolean"}`},
		{AnswerInteger{Min: -1, Max: 3}, `{"type":"integer","minimum":-1,"maximum":3}`},
		{AnswerEnum{Values: []string{"a", `b"c`}}, `{"type":"string","enum":["a","b\"c"]}`},
	} {
		if got := c.a.Schema(); got != c.want {
			t.Errorf("%T schema %s, want %s", c.a, got, c.want)
		}
	}
}

func TestHandleNames(t *testing.T) {
	for s, want := range map[string]bool{"h1": true, "h10": true, "h999999999": true, "h0": false, "h": false,
		"h1000000000": false, "H1": false, "h-1": false, "h1 ": false, "x1": false} {
		if got := ValidHandleName(s); got != want {
			t.Errorf("ValidHandleName(%q) = %t", s, got)
		}
	}
}

func TestMapArgStrings(t *testing.T) {
	args, _ := DecodeToolArgs("notes_write", `{"path":"a.md","content":"handle:h1"}`)
	if got := ArgStrings(args); len(got) != 2 || got[1] != "handle:h1" {
		t.Fatalf("ArgStrings = %q", got)
	}
	out, err := MapArgStrings(args, func(s string) (string, error) { return strings.ToUpper(s), nil })
	if err != nil || out.(NotesWriteArgs) != (NotesWriteArgs{Path: "A.MD", Content: "HANDLE:H1"}) {
		t.Fatalf("MapArgStrings = %+v, %v", out, err)
	}
	if args.(NotesWriteArgs).Content != "handle:h1" {
		t.Error("MapArgStrings changed its input")
	}
	in, _ := DecodeToolArgs("inspect", `{"handle":"h1","question":"q","answer":{"type":"enum","values":["handle:h2"]}}`)
	if got := ArgStrings(in); len(got) != 2 {
		t.Errorf("inspect's strings are its handle and question, not its enum values: %q", got)
	}
}

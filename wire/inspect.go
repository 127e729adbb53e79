package wire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Handles and inspect (DESIGN.md section 15): a grant with result =
// "handle" makes brokerd keep a result and hand the model a HandleRef; the
// inspect tool asks a typed question about a handle, answered by a
// quarantined model request that brokerd sends inferproxy as an
// InspectRequest. The owner reads a handle with HandleShow.

// HandleRef is the whole content of a result kept as a handle: what the
// model may know of it without reading it.
type HandleRef struct {
	Handle    string    `json:"handle"` // h<N>
	Tool      string    `json:"tool"`
	Class     DataClass `json:"class"`
	Untrusted bool      `json:"untrusted"`
	Bytes     uint64    `json:"bytes"`
}

// HandlePrefix leads a string argument that stands for a handle's content:
// "handle:h3".
const HandlePrefix = "handle:"

// ValidHandleName reports whether s is h<N>, N a decimal from 1 without
// leading zeros and at most 9 digits.
func ValidHandleName(s string) bool {
	n, ok := strings.CutPrefix(s, "h")
	if !ok || n == "" || len(n) > 9 || n[0] == '0' {
		return false
	}
	return strings.Trim(n, "0123456789") == ""
}

// InspectArgs are inspect's arguments: a question about a handle and the
// type its answer must have.
type InspectArgs struct {
	Handle   string        `json:"handle"` // h<N>
	Question string        `json:"question"`
	Answer   InspectAnswer `json:"answer"`
}

func (InspectArgs) Subject() string  { return "" }
func (InspectArgs) ToolName() string { return "inspect" }
func (InspectArgs) isToolArgs()      {}

// InspectAnswer is the type an inspect answer must have: AnswerBool,
// AnswerEnum or AnswerInteger, tagged "type". Each is small enough that it
// cannot carry instructions.
type InspectAnswer interface {
	// Schema is the JSON schema that admits exactly the answers of the
	// type, as llama-server's response_format json_schema takes it.
	Schema() string
	// Parse checks a model's answer and returns it canonically; the error
	// never quotes the answer.
	Parse(text string) (string, error)
	check() error
}

// AnswerBool is true or false.
type AnswerBool struct{}

// AnswerEnum is one of Values: 1 to MaxEnumValues distinct non-empty
// strings of at most MaxEnumValueBytes.
type AnswerEnum struct {
	Values []string `json:"values"`
}

// AnswerInteger is an integer from Min to Max.
type AnswerInteger struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// Bounds of an enum answer (DESIGN.md section 15: at most 16 values).
const (
	MaxEnumValues     = 16
	MaxEnumValueBytes = 64
	// MaxQuestionBytes bounds an inspect question.
	MaxQuestionBytes = 2048
	// MaxIntegerValues bounds how many values an integer answer may take
	// (max - min + 1): 16 bits an answer, like an enum's few. An answer
	// over the whole int64 range would carry eight bytes of a secret
	// handle per question once a grant declassifies it, enough to spell
	// out a key in a few handles.
	MaxIntegerValues = 1 << 16
)

var inspectAnswers = newUnion[InspectAnswer]("type", "",
	variant{"bool", AnswerBool{}},
	variant{"enum", AnswerEnum{}},
	variant{"integer", AnswerInteger{}},
)

func (AnswerBool) Schema() string { return `{"type":"boolean"}` }

func (a AnswerEnum) Schema() string {
	quoted := make([]string, len(a.Values))
	for i, v := range a.Values {
		quoted[i] = string(mustQuote(v))
	}
	return `{"type":"string","enum":[` + strings.Join(quoted, ",") + `]}`
}

func (a AnswerInteger) Schema() string {
	return fmt.Sprintf(`{"type":"integer","minimum":%d,"maximum":%d}`, a.Min, a.Max)
}

// errOffType is every refusal of an answer: it says what was wanted, never
// what came.
func errOffType(want string) error { return fmt.Errorf("the answer is not %s", want) }

func (AnswerBool) Parse(text string) (string, error) {
	switch t := strings.TrimSpace(text); t {
	case "true", "false":
		return t, nil
	}
	return "", errOffType("true or false")
}

func (a AnswerEnum) Parse(text string) (string, error) {
	var s string
	if err := decodeTop([]byte(strings.TrimSpace(text)), &s); err == nil && slices.Contains(a.Values, s) {
		return string(mustQuote(s)), nil
	}
	return "", errOffType(fmt.Sprintf("one of the %d values asked for", len(a.Values)))
}

func (a AnswerInteger) Parse(text string) (string, error) {
	t := strings.TrimSpace(text)
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != t || n < a.Min || n > a.Max {
		return "", errOffType(fmt.Sprintf("an integer from %d to %d", a.Min, a.Max))
	}
	return t, nil
}

// mustQuote writes s as a canonical JSON string.
func mustQuote(s string) []byte {
	b, err := encodeTop(&s)
	if err != nil {
		return []byte(`""`)
	}
	return b
}

func (AnswerBool) check() error { return nil }

func (a AnswerEnum) check() error {
	if len(a.Values) == 0 || len(a.Values) > MaxEnumValues {
		return fmt.Errorf("an enum answer has 1 to %d values, not %d", MaxEnumValues, len(a.Values))
	}
	for i, v := range a.Values {
		switch {
		case v == "" || len(v) > MaxEnumValueBytes || !utf8.ValidString(v):
			return fmt.Errorf("enum value %d must be 1 to %d bytes of text", i+1, MaxEnumValueBytes)
		case slices.Contains(a.Values[:i], v):
			return fmt.Errorf("enum value %d repeats an earlier one", i+1)
		}
	}
	return nil
}

func (a AnswerInteger) check() error {
	if a.Min > a.Max {
		return fmt.Errorf("an integer answer needs min <= max, not %d > %d", a.Min, a.Max)
	}
	// The span in uint64 cannot overflow, whatever the bounds' signs.
	if span := uint64(a.Max) - uint64(a.Min); span >= MaxIntegerValues {
		return fmt.Errorf("an integer answer takes at most %d values, not min %d to max %d", MaxIntegerValues, a.Min, a.Max)
	}
	return nil
}

// decodeInspect decodes inspect's arguments and checks what the types
// alone cannot: the handle's name, the question's size, the answer type.
func decodeInspect(arguments []byte) (ToolArgs, error) {
	args, err := decodeArgs[InspectArgs](arguments)
	if err != nil {
		return nil, err
	}
	a := args.(InspectArgs)
	switch {
	case !ValidHandleName(a.Handle):
		return nil, badMessage("handle must be a handle's name, h1, h2, …")
	case a.Question == "" || len(a.Question) > MaxQuestionBytes:
		return nil, badMessage("question must be 1 to %d bytes", MaxQuestionBytes)
	case a.Answer == nil:
		return nil, badMessage("answer is required")
	}
	if err := a.Answer.check(); err != nil {
		return nil, badMessage("answer: %v", err)
	}
	return a, nil
}

// InspectRequest is brokerd's quarantined question to inferproxy: the
// handle's content goes as data, never as instructions, and the answer
// must have the type Answer says.
type InspectRequest struct {
	Question string        `json:"question"`
	Data     string        `json:"data"`
	Answer   InspectAnswer `json:"answer"`
}

// InspectResult is the model's answer as it came, for brokerd to check
// against the type; inferproxy cuts it at MaxInspectAnswerBytes.
type InspectResult struct {
	Answer string `json:"answer"`
}

// MaxInspectAnswerBytes bounds what inferproxy returns of an answer: the
// longest answer of any type is far shorter.
const MaxInspectAnswerBytes = 256

// HandleShow asks brokerd for one of a session's handles, for the owner.
type HandleShow struct {
	Session SessionID `json:"session"`
	Handle  string    `json:"handle"`
}

// HandleShowResult is the handle with its content, or Ref null when the
// session has no such handle.
type HandleShowResult struct {
	Session SessionID  `json:"session"`
	Ref     *HandleRef `json:"ref"`
	Content string     `json:"content"`
}

func (InspectRequest) isMessage()   {}
func (InspectResult) isMessage()    {}
func (HandleShow) isMessage()       {}
func (HandleShowResult) isMessage() {}

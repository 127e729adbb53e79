package wire

import (
	"reflect"
	"strings"
	"testing"
)

const toolRequestBody = `{"session":"s1","call":1,"tool":"t","arguments":"{}"}`

func envelopeText(v, final, msg string) string {
	return `{"v":` + v + `,"id":7,"final":` + final + `,"msg":` + msg + `}`
}

// Rules the fixtures do not show one by one; each bad input names its error.
func TestDecodeStrictness(t *testing.T) {
	req := `{"kind":"tool_request","body":` + toolRequestBody + `}`
	for _, c := range []struct {
		name, in string
		code     ErrorCode // "" means accepted
		detail   string    // a part of the error's text
	}{
		{"whitespace is allowed", " {\"v\" : 1, \"id\":7,\n\"final\":true,\"msg\":" + req + "}\n", "", ""},
		{"members in any order", `{"msg":` + req + `,"final":true,"id":7,"v":1}`, "", ""},
		{"body before kind", envelopeText("1", "true", `{"body":`+toolRequestBody+`,"kind":"tool_request"}`), "", ""},
		{"escaped text", envelopeText("1", "true", `{"kind":"tool_request","body":{"session":"s1","call":1,"tool":"\u0074","arguments":"{}"}}`), "", ""},
		{"v as string", envelopeText(`"1"`, "true", req), BadMessage, `/v`},
		{"v negative", envelopeText("-1", "true", req), BadVersion, "v -1 is not supported"},
		{"v huge", envelopeText("99999999999", "true", req), BadVersion, "not supported"},
		{"v float", envelopeText("1.0", "true", req), BadMessage, "/v"},
		{"v 2 with other changes", `{"v":2,"id":7,"final":true,"msg":{"kind":"new_kind","body":{}},"trace":"x"}`, BadVersion, "v 2"},
		{"missing v", `{"id":7,"final":true,"msg":` + req + `}`, BadMessage, `missing field "v"`},
		{"null msg", envelopeText("1", "true", "null"), BadMessage, "null"},
		{"null final", envelopeText("1", "null", req), BadMessage, "null"},
		{"msg is array", envelopeText("1", "true", "[]"), BadMessage, "must be an object"},
		{"extra member beside kind", envelopeText("1", "true", `{"kind":"tool_request","body":`+toolRequestBody+`,"x":1}`), BadMessage, `unknown field "x"`},
		{"missing kind", envelopeText("1", "true", `{"body":`+toolRequestBody+`}`), BadMessage, `missing field "kind"`},
		{"kind not a string", envelopeText("1", "true", `{"kind":1,"body":{}}`), BadMessage, "kind must be a string"},
		{"null body", envelopeText("1", "true", `{"kind":"tool_request","body":null}`), BadMessage, "null"},
		{"missing arguments", envelopeText("1", "true", `{"kind":"tool_request","body":{"session":"s1","call":1,"tool":"t"}}`), BadMessage, `missing field "arguments"`},
		{"status missing", envelopeText("1", "true", `{"kind":"tool_response","body":{"reason":"no_grant"}}`), BadMessage, `missing field "status"`},
		{"tool request not final", envelopeText("1", "false", req), BadMessage, "must be final"},
		{"pending approval final", envelopeText("1", "true", `{"kind":"tool_response","body":{"status":"pending_approval","approval":"a","expires":"2026-09-17T08:05:00.000Z"}}`), BadMessage, "never final"},
		{"nested trailing garbage", envelopeText("1", "true", req) + "x", BadMessage, "invalid JSON"},
		{"empty payload", "", BadMessage, "JSON"},
		{"deep nesting in arguments position", envelopeText("1", "true", `{"kind":"tool_request","body":{"session":"s1","call":1,"tool":"t","arguments":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`}}`), BadMessage, "/arguments"},
		{"unicode escape of non-character is fine", envelopeText("1", "true", `{"kind":"error","body":{"code":"internal","detail":"\uffff"}}`), "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.in))
			if got := CodeOf(err); got != c.code {
				t.Fatalf("got code %q (%v), want %q", got, err, c.code)
			}
			if err != nil && !strings.Contains(err.Error(), c.detail) {
				t.Errorf("error %q does not say %q", err, c.detail)
			}
		})
	}
}

func TestTimestamps(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"1970-01-01T00:00:00.000Z", true},
		{"2028-02-29T12:00:00.000Z", true},
		{"9999-12-31T23:59:59.999Z", true},
		{"2027-02-29T12:00:00.000Z", false},
		{"1969-12-31T23:59:59.999Z", false},
		{"2026-09-17T24:00:00.000Z", false},
		{"2026-09-17T23:59:60.000Z", false},
		{"2026-09-17t08:05:00.000Z", false},
		{"2026-09-17T08:05:00.000z", false},
		{"2026-09-17T08:05:00.0000Z", false},
		{"2026-09-17T08:05:00.00Z", false},
		{"2026-9-17T08:05:00.000Z", false},
		{" 2026-09-17T08:05:00.000Z", false},
		{"+2026-09-17T08:05:00.000Z", false},
		{"", false},
	} {
		ts, err := ParseTimestamp(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseTimestamp(%q): err %v, want ok=%v", c.in, err, c.ok)
		}
		if err == nil && ts.String() != c.in {
			t.Errorf("ParseTimestamp(%q) formats back as %q", c.in, ts)
		}
	}
	if _, err := (MaxTimestamp + 1).MarshalText(); err == nil {
		t.Error("a timestamp after 9999 encodes")
	}
}

func TestHashAndSession(t *testing.T) {
	upper := strings.Repeat("A", 64)
	for _, s := range []string{upper, strings.Repeat("0", 63), strings.Repeat("0", 65), strings.Repeat("g", 64)} {
		if _, err := ParseHash32(s); err == nil {
			t.Errorf("ParseHash32(%q) accepted", s)
		}
	}
	if _, err := ParseSessionID("chat-2026-09-17"); err != nil {
		t.Error(err)
	}
	for _, s := range []string{"", "a b", "a/b", "..", "a_b", "é", strings.Repeat("a", 65)} {
		if _, err := ParseSessionID(s); err == nil {
			t.Errorf("ParseSessionID(%q) accepted", s)
		}
	}
}

// Encode checks values too: nothing invalid leaves the process.
func TestEncodeRefusesInvalidValues(t *testing.T) {
	s1, _ := ParseSessionID("s1")
	for _, c := range []struct {
		name string
		env  Envelope
		want string
	}{
		{"nil message", Envelope{Final: true}, "no Message"},
		{"zero session", Envelope{Final: true, Msg: ToolRequest{Call: 1, Tool: "t", Arguments: "{}"}}, "session id is empty"},
		{"zero class", Envelope{Final: true, Msg: Result{Content: "x"}}, "invalid data class"},
		{"unknown reason", Envelope{Final: true, Msg: Denied{Reason: "because"}}, "deny reason"},
		{"unknown error code", Envelope{Final: true, Msg: WireError{Code: "oops"}}, "error code"},
		{"invalid UTF-8", Envelope{Final: true, Msg: ToolRequest{Session: s1, Tool: "t\xff", Arguments: "{}"}}, "UTF-8"},
		{"pending marked final", Envelope{Final: true, Msg: PendingApproval{Approval: "a"}}, "never final"},
		{"result not final", Envelope{Msg: Failed{Message: "x"}}, "must be final"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Encode(c.env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Encode gave %s, %v; want an error saying %q", b, err, c.want)
			}
		})
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	s1, _ := ParseSessionID("s1")
	grant, post := "g", "p9"
	reasoning := "think"
	entries := []AuditEntry{
		AuditRecord{Seq: 1, Session: s1, Call: 1, Tool: "t", Arguments: "{}", SessionTaint: Secret, Decision: DecisionDenied{Reason: NoGrant}},
		AuditRecord{Seq: 2, Session: s1, Call: 2, Tool: "t", Arguments: "{}", SessionTaint: Public, Decision: DecisionDenied{Reason: TaintTooHigh, Grant: &grant}},
		AuditRecord{Seq: 3, Session: s1, Call: 3, Tool: "t", Arguments: "{}", SessionTaint: Private, Decision: DecisionApproved{Grant: grant, Approver: "mm:u", Post: &post}},
		RecoveryRecord{Seq: 4, Time: MaxTimestamp, Recovery: Recovery{TornBytes: 57}},
	}
	for _, e := range entries {
		b, err := EncodeAuditEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAuditEntry(b)
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("%s: got %+v, %v", b, got, err)
		}
	}
	records := []LogRecord{
		Assistant{ReasoningContent: &reasoning, ToolCalls: []ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}},
		SessionStart{Session: s1, Epoch: 4294967295, Slot: 3},
		EpochEnd{Next: 2, Summary: "s"},
	}
	for _, r := range records {
		b, err := EncodeLogRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeLogRecord(b)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("%s: got %+v, %v", b, got, err)
		}
	}
}

func TestRecordStrictness(t *testing.T) {
	for _, c := range []struct{ name, line, detail string }{
		{"null tool calls", `{"type":"assistant","time":"2026-09-17T08:05:00.000Z","content":null,"reasoning_content":null,"tool_calls":null}`, "null"},
		{"missing option", `{"type":"assistant","time":"2026-09-17T08:05:00.000Z","content":null,"tool_calls":[]}`, `missing field "reasoning_content"`},
		{"tool call missing id", `{"type":"assistant","time":"2026-09-17T08:05:00.000Z","content":null,"reasoning_content":null,"tool_calls":[{"name":"n","arguments":"{}"}]}`, `missing field "id"`},
		{"unknown type", `{"type":"system","time":"2026-09-17T08:05:00.000Z"}`, `unknown type "system"`},
		{"epoch over uint32", `{"type":"epoch_end","time":"2026-09-17T08:05:00.000Z","next":4294967296,"summary":""}`, "out of range"},
		{"tag twice", `{"type":"user","type":"user","time":"2026-09-17T08:05:00.000Z","content":""}`, "duplicate"},
	} {
		if _, err := DecodeLogRecord([]byte(c.line)); err == nil || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.detail)
		}
	}
	for _, c := range []struct{ name, line, detail string }{
		{"decision null", `{"seq":1,"time":"2026-09-17T08:05:00.000Z","prev":"` + strings.Repeat("0", 64) + `","session":"s","call":1,"tool":"t","arguments":"","session_taint":"private","decision":null}`, "null"},
		{"denied without grant member", `{"seq":1,"time":"2026-09-17T08:05:00.000Z","prev":"` + strings.Repeat("0", 64) + `","session":"s","call":1,"tool":"t","arguments":"","session_taint":"private","decision":{"outcome":"denied","reason":"no_grant"}}`, `missing field "grant"`},
		{"recovery with decision", `{"seq":1,"time":"2026-09-17T08:05:00.000Z","prev":"` + strings.Repeat("0", 64) + `","recovery":{"torn_bytes":1,"torn_sha256":"` + strings.Repeat("0", 64) + `"},"decision":null}`, `unknown field "decision"`},
		{"uppercase hash", `{"seq":1,"time":"2026-09-17T08:05:00.000Z","prev":"` + strings.Repeat("A", 64) + `","recovery":{"torn_bytes":1,"torn_sha256":"` + strings.Repeat("0", 64) + `"}}`, "hex"},
	} {
		if _, err := DecodeAuditEntry([]byte(c.line)); err == nil || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.detail)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		m    Message
		want string
	}{
		{ToolRequest{}, "tool_request"},
		{Result{}, "tool_response"},
		{PendingApproval{}, "tool_response"},
		{WireError{}, "error"},
		{nil, ""},
	} {
		if got := KindOf(c.m); got != c.want {
			t.Errorf("KindOf(%T) = %q, want %q", c.m, got, c.want)
		}
	}
}

package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the protocol version every envelope carries as "v".
const Version = 1

// Envelope is one frame's content. The version is not a field: Encode always
// writes Version and Decode refuses any other.
type Envelope struct {
	// ID is chosen by the requester; every frame of the response carries it.
	ID uint64
	// Final is false on every frame of a response but the last, and on
	// nothing else: requests are single frames with Final true.
	Final bool
	Msg   Message
}

// Message is one of the kinds a frame can carry: ToolRequest, the
// ToolResponse variants, WireError, and the kinds of broker.go. The set is
// closed: the table below lists it.
type Message interface{ isMessage() }

// ToolRequest asks brokerd to run one tool call for a session.
type ToolRequest struct {
	Session SessionID `json:"session"`
	Call    CallID    `json:"call"`
	Tool    string    `json:"tool"`
	// Arguments is the model's JSON object, carried unparsed: only the
	// policy decides whether it parses, and the audit log keeps it whole.
	Arguments string `json:"arguments"`
}

// ToolResponse is brokerd's answer to a ToolRequest: PendingApproval (never
// final), then exactly one of Result, Failed or Denied.
type ToolResponse interface {
	Message
	isToolResponse()
}

// PendingApproval says the call waits for the owner's answer until Expires.
type PendingApproval struct {
	Approval string    `json:"approval"`
	Expires  Timestamp `json:"expires"`
}

// Result is a tool's output, labelled by brokerd from the grant, never by the tool.
type Result struct {
	Content   string    `json:"content"`
	Class     DataClass `json:"class"`
	Untrusted bool      `json:"untrusted"`
	Truncated bool      `json:"truncated"`
}

// Failed says the tool ran and failed; it is not a policy decision.
type Failed struct {
	Message string `json:"message"`
}

// Denied says the policy or the owner refused the call.
type Denied struct {
	Reason DenyReason `json:"reason"`
}

func (ToolRequest) isMessage()     {}
func (PendingApproval) isMessage() {}
func (Result) isMessage()          {}
func (Failed) isMessage()          {}
func (Denied) isMessage()          {}
func (WireError) isMessage()       {}

func (PendingApproval) isToolResponse() {}
func (Result) isToolResponse()          {}
func (Failed) isToolResponse()          {}
func (Denied) isToolResponse()          {}

// messages is the table of kinds; a later kind is one more line here, plus
// its fixtures.
var messages = newUnion[Message]("kind", "body",
	variant{"tool_request", ToolRequest{}},
	variant{"tool_response", (*ToolResponse)(nil)},
	variant{"error", WireError{}},
	variant{"tool_list", ToolList{}},
	variant{"tool_list_result", ToolListResult{}},
	variant{"approval_list", ApprovalList{}},
	variant{"approval_list_result", ApprovalListResult{}},
	variant{"approval_answer", ApprovalAnswer{}},
	variant{"approval_answer_result", ApprovalAnswerResult{}},
	variant{"session_state", SessionState{}},
	variant{"session_state_result", SessionStateResult{}},
	variant{"approval_request", ApprovalRequest{}},
	variant{"approval_decision", ApprovalDecision{}},
	variant{"egress_open", EgressOpen{}},
	variant{"egress_ready", EgressReady{}},
	variant{"egress_mcp_open", EgressMcpOpen{}}, // egressmcp.go
	variant{"chat_send", ChatSend{}},
	variant{"chat_event", (*ChatEvent)(nil)},
	variant{"chat_done", ChatDone{}},
	variant{"session_list", SessionList{}},
	variant{"session_list_result", SessionListResult{}},
	variant{"session_log", SessionLog{}},
	variant{"session_log_result", SessionLogResult{}},
	variant{"notes_list", NotesList{}},
	variant{"notes_list_part", NotesListPart{}},
	variant{"notes_list_result", NotesListResult{}},
	variant{"notes_show", NotesShow{}},
	variant{"notes_show_result", NotesShowResult{}},
	variant{"notes_endorse", NotesEndorse{}},
	variant{"notes_endorse_result", NotesEndorseResult{}},
	variant{"notes_refused", NotesRefused{}},
	// Scheduled jobs (jobs.go).
	variant{"job_start", JobStart{}},
	variant{"job_started", JobStarted{}},
	variant{"job_refused", JobRefused{}},
	variant{"job_done", JobDone{}},
	variant{"job_recorded", JobRecorded{}},
	variant{"job_list", JobList{}},
	variant{"job_list_result", JobListResult{}},
	variant{"job_show", JobShow{}},
	variant{"job_show_result", JobShowResult{}},
	variant{"job_run", JobRunNow{}},
	variant{"job_triggered", JobTriggered{}},
	variant{"job_deliveries", JobDeliveries{}},
	variant{"job_delivery", JobDelivery{}},
	variant{"job_ended", JobEnded{}},
	variant{"job_ended_noted", JobEndedNoted{}},
	// The audit witness (witness.go).
	variant{"checkpoint_submit", CheckpointSubmit{}},
	variant{"checkpoint_witnessed", CheckpointWitnessed{}},
	variant{"checkpoint_refused", CheckpointRefused{}},
	variant{"checkpoint_add", CheckpointAdd{}},
	variant{"checkpoint_cosigned", CheckpointCosigned{}},
	variant{"checkpoint_post", CheckpointPost{}},
	variant{"checkpoint_posted", CheckpointPosted{}},
	// Handles and inspect (inspect.go).
	variant{"inspect_request", InspectRequest{}},
	variant{"inspect_result", InspectResult{}},
	variant{"handle_show", HandleShow{}},
	variant{"handle_show_result", HandleShowResult{}},
	// MCP servers under the broker (mcp.go).
	variant{"mcp_tools", McpTools{}},
	variant{"mcp_tools_result", McpToolsResult{}},
	variant{"mcp_tool_call", McpToolCall{}},
	variant{"mcp_notice", McpNotice{}},
	variant{"mcp_tool_result", McpToolResult{}},
	variant{"mcp_tool_error", McpToolError{}},
	variant{"mcp_pin", McpPin{}},
	variant{"mcp_pin_result", McpPinResult{}},
	variant{"mcp_list", McpList{}},
	variant{"mcp_list_result", McpListResult{}},
	variant{"mcp_call", McpCall{}},
)

var toolResponses = newUnion[ToolResponse]("status", "",
	variant{"pending_approval", PendingApproval{}},
	variant{"result", Result{}},
	variant{"failed", Failed{}},
	variant{"denied", Denied{}},
)

var unions = []*union{messages, toolResponses, chatEvents, decisions, logRecords, inspectAnswers}

// partial lists the message types sent with final false: a response that
// goes on. Every other message is a whole request or the end of a response.
var partial = []reflect.Type{
	reflect.TypeFor[PendingApproval](),
	reflect.TypeFor[SessionEvent](),
	reflect.TypeFor[Delta](),
	reflect.TypeFor[Reasoning](),
	reflect.TypeFor[ToolCallEvent](),
	reflect.TypeFor[ApprovalPendingEvent](),
	reflect.TypeFor[ToolResultEvent](),
	reflect.TypeFor[NotesListPart](),
	reflect.TypeFor[JobDelivery](),
	reflect.TypeFor[McpNotice](),
}

// KindOf returns m's kind as the wire names it ("tool_request", ...), or ""
// for a nil or foreign Message.
func KindOf(m Message) string {
	if m == nil {
		return ""
	}
	tag, _, _ := messages.tagOf(reflect.TypeOf(m))
	return tag
}

// Kinds lists every kind a frame can carry, in the order of the table, so
// that what a socket accepts can be checked against what exists.
func Kinds() []string { return slices.Clone(messages.tags) }

// IsPartial reports whether m is sent with final false.
func IsPartial(m Message) bool {
	for _, t := range partial {
		if reflect.TypeOf(m) == t {
			return true
		}
	}
	return false
}

func checkFinal(e Envelope) error {
	if e.Final == IsPartial(e.Msg) {
		if e.Final {
			return badMessage("a %s frame is never final", KindOf(e.Msg))
		}
		return badMessage("a %s frame must be final", KindOf(e.Msg))
	}
	return nil
}

// envelopeJSON is the envelope as it is on the wire.
type envelopeJSON struct {
	V     uint32  `json:"v"`
	ID    uint64  `json:"id"`
	Final bool    `json:"final"`
	Msg   Message `json:"msg"`
}

// Encode returns e's canonical bytes, after checking every value in it.
func Encode(e Envelope) ([]byte, error) {
	if err := checkFinal(e); err != nil {
		return nil, fmt.Errorf("wire: encode: %w", err)
	}
	return encodeTop(&envelopeJSON{V: Version, ID: e.ID, Final: e.Final, Msg: e.Msg})
}

// Decode parses one envelope strictly. Its errors have CodeOf BadVersion when
// v is an integer other than Version, and BadMessage for anything else wrong.
func Decode(payload []byte) (Envelope, error) {
	var ej envelopeJSON
	if err := decodeTop(payload, &ej); err != nil {
		if verr := foreignVersion(payload); verr != nil {
			return Envelope{}, verr
		}
		return Envelope{}, err
	}
	if ej.V != Version {
		return Envelope{}, versionError(fmt.Sprint(ej.V))
	}
	e := Envelope{ID: ej.ID, Final: ej.Final, Msg: ej.Msg}
	if err := checkFinal(e); err != nil {
		return Envelope{}, err
	}
	return e, nil
}

func versionError(v string) error {
	return WireError{Code: BadVersion, Detail: fmt.Sprintf("v %s is not supported", v)}
}

// foreignVersion looks for a top-level "v" holding an integer other than
// Version in a payload that did not decode, so that a peer speaking another
// version, whose envelope may differ in other ways too, learns why.
func foreignVersion(payload []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(payload), jsonOptions)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		name, err := readName(dec)
		if err != nil {
			return nil
		}
		if name != "v" {
			if dec.SkipValue() != nil {
				return nil
			}
			continue
		}
		raw, err := dec.ReadValue()
		if err != nil || raw.Kind() != '0' || !isInteger(raw) || string(raw) == "1" {
			return nil
		}
		return versionError(string(raw))
	}
	return nil
}

// isInteger reports whether a JSON number has no fraction and no exponent.
func isInteger(num []byte) bool {
	return !bytes.ContainsAny(num, ".eE")
}

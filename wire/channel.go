package wire

// The channel protocol on loop.sock, the same for bxctl chat and gatewayd:
// chat_send is answered by chat_event frames (final false) and one final
// chat_done; session_list and session_log let the owner see sessions. An
// approval is only announced here (approval_pending names it); what it asks
// is read from brokerd's admin socket, never from loopd's words.

// ChatSend is one message from the owner. Session null starts a new session
// with a name loopd chooses; a name resumes that session. Only gatewayd may
// start a session under a name it gives (one per thread): through the
// owner's socket a name no session has is answered bad_message.
type ChatSend struct {
	Session *SessionID `json:"session"`
	Content string     `json:"content"`
}

// ChatEvent is one step of a turn as it happens: SessionEvent first, then
// Delta, Reasoning, ToolCallEvent, ApprovalPendingEvent and ToolResultEvent
// in the order they occur.
type ChatEvent interface {
	Message
	isChatEvent()
}

// SessionEvent names the session the turn belongs to (new or resumed) once
// it exists; a turn that fails before then sends none.
type SessionEvent struct {
	Session SessionID `json:"session"`
}

// Delta is text of the reply as the model streams it.
type Delta struct {
	Text string `json:"text"`
}

// Reasoning is the model's reasoning as it streams.
type Reasoning struct {
	Text string `json:"text"`
}

// ToolCallEvent says the model asked for a tool call, sent to brokerd.
type ToolCallEvent struct {
	Call      CallID `json:"call"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
}

// ApprovalPendingEvent says brokerd waits for the owner on this call.
type ApprovalPendingEvent struct {
	Call     CallID    `json:"call"`
	Approval string    `json:"approval"`
	Expires  Timestamp `json:"expires"`
}

// ToolResultEvent says how a call ended: "result", "failed" or "denied",
// with a short detail for people (a result's size and class, the failure,
// the deny reason). The full result goes to the model, not here.
type ToolResultEvent struct {
	Call    CallID `json:"call"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
}

// ChatDone ends a turn with the model's final reply.
type ChatDone struct {
	Session SessionID `json:"session"`
	Content string    `json:"content"`
}

// SessionList asks for the sessions loopd keeps.
type SessionList struct{}

// SessionListResult lists them, most recently active first.
type SessionListResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionInfo is one session in a list.
type SessionInfo struct {
	Session SessionID `json:"session"`
	Epoch   Epoch     `json:"epoch"`
	Updated Timestamp `json:"updated"`
	Turns   uint64    `json:"turns"` // the owner's messages so far
}

// SessionLog asks for one session's current epoch, record by record.
type SessionLog struct {
	Session SessionID `json:"session"`
}

// SessionLogResult is the session's log as stored.
type SessionLogResult struct {
	Session SessionID   `json:"session"`
	Epoch   Epoch       `json:"epoch"`
	Records []LogRecord `json:"records"`
}

func (ChatSend) isMessage()             {}
func (SessionEvent) isMessage()         {}
func (Delta) isMessage()                {}
func (Reasoning) isMessage()            {}
func (ToolCallEvent) isMessage()        {}
func (ApprovalPendingEvent) isMessage() {}
func (ToolResultEvent) isMessage()      {}
func (ChatDone) isMessage()             {}
func (SessionList) isMessage()          {}
func (SessionListResult) isMessage()    {}
func (SessionLog) isMessage()           {}
func (SessionLogResult) isMessage()     {}

func (SessionEvent) isChatEvent()         {}
func (Delta) isChatEvent()                {}
func (Reasoning) isChatEvent()            {}
func (ToolCallEvent) isChatEvent()        {}
func (ApprovalPendingEvent) isChatEvent() {}
func (ToolResultEvent) isChatEvent()      {}

var chatEvents = newUnion[ChatEvent]("event", "",
	variant{"session", SessionEvent{}},
	variant{"delta", Delta{}},
	variant{"reasoning", Reasoning{}},
	variant{"tool_call", ToolCallEvent{}},
	variant{"approval_pending", ApprovalPendingEvent{}},
	variant{"tool_result", ToolResultEvent{}},
)

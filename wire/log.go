package wire

// LogRecord is one line of a session log: SessionStart, User, Assistant,
// ToolResult, CacheLoss or EpochEnd.
type LogRecord interface{ isLogRecord() }

// SessionStart opens a session's epoch file.
type SessionStart struct {
	Time     Timestamp `json:"time"`
	Session  SessionID `json:"session"`
	Epoch    Epoch     `json:"epoch"`
	Slot     uint32    `json:"slot"`     // the llama-server slot the session keeps
	Baseline Hash32    `json:"baseline"` // hash of the system prompt and tool list
}

// User is the owner's message.
type User struct {
	Time    Timestamp `json:"time"`
	Content string    `json:"content"`
}

// Assistant is the model's turn, exactly as the server returned it, so that
// replaying it keeps the prompt prefix byte-identical.
type Assistant struct {
	Time             Timestamp  `json:"time"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content"`
	ToolCalls        []ToolCall `json:"tool_calls"`
}

// ToolCall is one call in an Assistant turn.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResult is brokerd's answer to a call, as the model is shown it.
type ToolResult struct {
	Time       Timestamp `json:"time"`
	Call       CallID    `json:"call"`
	ToolCallID string    `json:"tool_call_id"`
	Content    string    `json:"content"`
	Class      DataClass `json:"class"`
	Untrusted  bool      `json:"untrusted"`
	Truncated  bool      `json:"truncated"`
}

// CacheLoss records that the server reused fewer prompt tokens than an
// unchanged prefix should have given.
type CacheLoss struct {
	Time     Timestamp `json:"time"`
	Expected uint64    `json:"expected"`
	Got      uint64    `json:"got"`
}

// EpochEnd closes an epoch; the next starts from Summary.
type EpochEnd struct {
	Time    Timestamp `json:"time"`
	Next    Epoch     `json:"next"`
	Summary string    `json:"summary"`
}

func (SessionStart) isLogRecord() {}
func (User) isLogRecord()         {}
func (Assistant) isLogRecord()    {}
func (ToolResult) isLogRecord()   {}
func (CacheLoss) isLogRecord()    {}
func (EpochEnd) isLogRecord()     {}

var logRecords = newUnion[LogRecord]("type", "",
	variant{"session_start", SessionStart{}},
	variant{"user", User{}},
	variant{"assistant", Assistant{}},
	variant{"tool_result", ToolResult{}},
	variant{"cache_loss", CacheLoss{}},
	variant{"epoch_end", EpochEnd{}},
)

// EncodeLogRecord returns r's canonical line, without a newline.
func EncodeLogRecord(r LogRecord) ([]byte, error) { return encodeTop(&r) }

// DecodeLogRecord parses one session log line (without its newline) strictly.
func DecodeLogRecord(line []byte) (LogRecord, error) {
	var r LogRecord
	if err := decodeTop(line, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// RecordTime is when r was written; every record carries its time.
func RecordTime(r LogRecord) Timestamp {
	switch r := r.(type) {
	case SessionStart:
		return r.Time
	case User:
		return r.Time
	case Assistant:
		return r.Time
	case ToolResult:
		return r.Time
	case CacheLoss:
		return r.Time
	case EpochEnd:
		return r.Time
	}
	return 0
}

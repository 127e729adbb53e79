package wire

import "fmt"

// The kinds brokerd serves besides tool_request: tool_list on loopd's socket;
// approval_list, approval_answer and session_state on the owner's admin
// socket; approval_request and approval_decision on gateway.sock; and
// egress_open on egress.sock. Which socket may carry which kind is the
// listener's table, not the codec's.

// ToolList asks which tools a session may be shown.
type ToolList struct {
	Session SessionID `json:"session"`
}

// ToolListResult lists the tools that have at least one usable grant.
type ToolListResult struct {
	Tools []ToolSpec `json:"tools"`
}

// ToolSpec is one tool as the model is shown it.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  string `json:"parameters"` // JSON schema text, carried unparsed
}

// ApprovalList asks for the pending approvals.
type ApprovalList struct{}

// ApprovalListResult lists them, as brokerd describes them.
type ApprovalListResult struct {
	Approvals []Approval `json:"approvals"`
}

// Approval is a pending ask decision, as the owner is shown it: the
// arguments are quoted data, never prose.
type Approval struct {
	Approval     string    `json:"approval"`
	Session      SessionID `json:"session"`
	Call         CallID    `json:"call"`
	Tool         string    `json:"tool"`
	Subject      string    `json:"subject"`   // what the call acts on, derived by brokerd: show it first
	Arguments    string    `json:"arguments"` // canonical JSON, exactly what runs
	Grant        string    `json:"grant"`
	SessionTaint DataClass `json:"session_taint"`
	// SessionUntrusted says the session has read untrusted data or the
	// call refers to an untrusted handle: why an auto grant with
	// when_untrusted = "ask" is asking. SessionTaint likewise is the
	// session's taint raised by the handles the call refers to.
	SessionUntrusted bool      `json:"session_untrusted"`
	Expires          Timestamp `json:"expires"`
}

// ApprovalAnswer is the owner's answer to one approval.
type ApprovalAnswer struct {
	Approval string `json:"approval"`
	Approve  bool   `json:"approve"`
}

// ApprovalAnswerResult says what became of the answer.
type ApprovalAnswerResult struct {
	Approval string          `json:"approval"`
	Outcome  ApprovalOutcome `json:"outcome"`
}

// ApprovalOutcome is approved or refused when the answer was taken, unknown
// when no approval of that id was pending (never made, answered or expired).
type ApprovalOutcome string

const (
	OutcomeApproved ApprovalOutcome = "approved"
	OutcomeRefused  ApprovalOutcome = "refused"
	OutcomeUnknown  ApprovalOutcome = "unknown"
)

var approvalOutcomes = []ApprovalOutcome{OutcomeApproved, OutcomeRefused, OutcomeUnknown}

func (o ApprovalOutcome) MarshalText() ([]byte, error) {
	if err := checkEnum(string(o), approvalOutcomes); err != nil {
		return nil, fmt.Errorf("approval outcome: %w", err)
	}
	return []byte(o), nil
}

func (o *ApprovalOutcome) UnmarshalText(b []byte) error {
	if err := checkEnum(string(b), approvalOutcomes); err != nil {
		return fmt.Errorf("approval outcome: %w", err)
	}
	*o = ApprovalOutcome(b)
	return nil
}

// SessionState asks for a session's taint and untrusted flag.
type SessionState struct {
	Session SessionID `json:"session"`
}

// SessionStateResult is what brokerd holds for the session.
type SessionStateResult struct {
	Session   SessionID `json:"session"`
	Taint     DataClass `json:"taint"`
	Untrusted bool      `json:"untrusted"`
}

// ApprovalRequest offers a pending approval to gatewayd.
type ApprovalRequest Approval

// ApprovalDecision is gatewayd's answer: who decided, on which post.
type ApprovalDecision struct {
	Approval string `json:"approval"`
	Approve  bool   `json:"approve"`
	Approver string `json:"approver"` // mm:<user id>
	Post     string `json:"post"`
}

// EgressOpen hands egressd one end of a socketpair (as SCM_RIGHTS beside the
// frame) with what that one call may reach.
type EgressOpen struct {
	Hosts []string `json:"hosts"` // the grant's hosts entries, as written
	// Method is the one HTTP method the call may use: GET for http_fetch,
	// POST for consult. egressd refuses any other, so a compromised fetch
	// sandbox cannot post with the owner's credential.
	Method string `json:"method"`
	// Authorization is the header value egressd adds to every request, so
	// that the secret never enters the sandbox.
	Authorization *string `json:"authorization"`
}

// EgressReady says egressd holds the descriptor and serves it.
type EgressReady struct{}

func (ToolList) isMessage()             {}
func (ToolListResult) isMessage()       {}
func (ApprovalList) isMessage()         {}
func (ApprovalListResult) isMessage()   {}
func (ApprovalAnswer) isMessage()       {}
func (ApprovalAnswerResult) isMessage() {}
func (SessionState) isMessage()         {}
func (SessionStateResult) isMessage()   {}
func (ApprovalRequest) isMessage()      {}
func (ApprovalDecision) isMessage()     {}
func (EgressOpen) isMessage()           {}
func (EgressReady) isMessage()          {}

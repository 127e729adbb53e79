package brokerd

import (
	"log"
	"strings"
	"sync"
	"time"

	"boxmaker/audit"
	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/checkpoints"
	"boxmaker/roles/brokerd/internal/handles"
	"boxmaker/roles/brokerd/internal/jobruns"
	"boxmaker/roles/brokerd/internal/sessions"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// broker is one running brokerd.
type broker struct {
	cfg       config.Config
	paths     config.Paths
	dial      dials // the sockets brokerd dials
	log       *log.Logger
	clock     func() time.Time
	audit     *audit.Writer
	witness   *checkpoints.Witness // hands each checkpoint to witnessd (internal/checkpoints)
	sessions  *sessions.Store      // each session's taint and trust (internal/sessions)
	handles   *handles.Store       // results kept as handles (internal/handles)
	approvals *approvals
	runner    *runner
	jobRuns   *jobruns.Runs // the job sessions brokerd minted (internal/jobruns)
	fatal     func(error)   // stops brokerd: the audit log can no longer be written
	gateway   bool          // offer approvals to gatewayd ([gateway] is configured)
	// secretApprovals: approvals of calls in sessions above private may be
	// offered to gatewayd too (gateway.secret_approvals).
	secretApprovals bool

	mcp *mcpState // MCP servers under the broker (mcp.go)

	badMu    sync.Mutex
	badSeen  map[string]bool // grant errors already logged, so each is logged once
	grantDir *policy.Dir
}

// replyFunc sends one frame of the answer to the request being served.
type replyFunc func(final bool, m wire.Message) error

// grants loads the grant files as they are now. A file that does not parse
// is left out (fail closed), and why is logged once per distinct error.
// policy.Dir parses a file again only when it changed (see its comment).
func (b *broker) grants() []policy.Grant {
	grants, bad, err := b.grantDir.Load()
	if why := b.grantDir.Uncached(); why != nil {
		b.logOnce("grants: " + why.Error())
	}
	if err != nil {
		b.logOnce(err.Error())
		return nil
	}
	for _, e := range bad {
		b.logOnce("ignoring a grant file: " + e.Error())
	}
	// Every grant, job-scoped ones included: decisions take grantsIn.
	return grants
}

func (b *broker) logOnce(msg string) {
	b.badMu.Lock()
	defer b.badMu.Unlock()
	if !b.badSeen[msg] {
		b.badSeen[msg] = true
		b.log.Print(strings.ReplaceAll(msg, "\n", "; "))
	}
}

// What each tool's description adds when the session is no longer clean,
// so that the model knows why tools are missing or ask first.
const (
	taintedNote   = " (This session has read secret data: only tools whose grants allow it are listed.)"
	untrustedNote = " (This session has read untrusted text, such as a web page: some tools are not listed or ask the owner first.)"
)

// toolList names the tools that have at least one grant usable in the
// session as brokerd knows it (policy.Grant.UsableIn: not deny, not
// expired, max_taint at least the session's taint, not dropped by
// when_untrusted = "deny" once it is untrusted), with what the model needs
// to call them. The list is advice to the model; every call is decided
// again.
func (b *broker) toolList(id wire.SessionID) (wire.ToolListResult, error) {
	state, err := b.sessions.Get(id)
	if err != nil {
		return wire.ToolListResult{}, err
	}
	now, err := wire.TimestampOf(b.clock())
	if err != nil {
		return wire.ToolListResult{}, err
	}
	usable := map[string]bool{}
	for _, g := range b.grantsIn(id) {
		if g.UsableIn(state, now) {
			usable[g.Tool()] = true
		}
	}
	note := ""
	if state.Taint() > wire.Private {
		note += taintedNote
	}
	if state.Untrusted() {
		note += untrustedNote
	}
	res := wire.ToolListResult{Tools: []wire.ToolSpec{}}
	for _, t := range wire.Tools() {
		if usable[t.Name] {
			res.Tools = append(res.Tools, wire.ToolSpec{Name: t.Name, Description: t.Description + note, Parameters: t.Schema})
		}
	}
	res.Tools = append(res.Tools, b.mcpToolSpecs(id, state, now, note)...)
	return res, nil
}

// sessionState is what brokerd holds for a session, for the owner.
func (b *broker) sessionState(id wire.SessionID) (wire.SessionStateResult, error) {
	st, err := b.sessions.Get(id)
	if err != nil {
		return wire.SessionStateResult{}, err
	}
	return wire.SessionStateResult{Session: id, Taint: st.Taint(), Untrusted: st.Untrusted()}, nil
}

// answerApproval delivers the owner's answer; the first answer wins.
func (b *broker) answerApproval(q wire.ApprovalAnswer, approver string) wire.ApprovalAnswerResult {
	res := wire.ApprovalAnswerResult{Approval: q.Approval, Outcome: wire.OutcomeUnknown}
	if b.approvals.answer(q.Approval, answer{approve: q.Approve, approver: approver}) {
		res.Outcome = wire.OutcomeRefused
		if q.Approve {
			res.Outcome = wire.OutcomeApproved
		}
		b.log.Printf("approval %s: %s by %s", q.Approval, res.Outcome, approver)
	}
	return res
}

package policy

import (
	"errors"
	"fmt"
	"strings"

	"boxmaker/wire"
)

// Outcome is what a Decision lets happen.
type Outcome uint8

const (
	Allowed        Outcome = iota + 1 // an auto grant: run now
	AwaitsApproval                    // an ask grant: run once the owner approves
	Approved                          // an ask grant the owner approved: run now
	Denied                            // do not run; Reason says why
)

var outcomeNames = [...]string{Allowed: "auto", AwaitsApproval: "ask", Approved: "approved", Denied: "denied"}

func (o Outcome) String() string {
	if o < Allowed || o > Denied {
		return "invalid"
	}
	return outcomeNames[o]
}

// Decision is the policy's answer to one tool call, and the only thing the
// tool runner accepts. Its fields are unexported, so only Decide, Approve
// and Refuse make a valid one; Go cannot stop Decision{}, so Runnable
// refuses the zero value (see TestZeroDecisionIsRefused and
// TestDecisionCannotBeBuiltOutsidePolicy).
type Decision struct {
	outcome   Outcome
	grant     Grant
	mode      Mode // what the call goes by: the grant's mode, or Ask where when_untrusted held an auto grant back
	reason    wire.DenyReason
	call      wire.Call // as requested: handles stand as their references
	input     wire.Call // as decided and run: each handle's content in place of its reference
	taint     wire.DataClass
	at        wire.Timestamp
	untrusted bool // the session's flag ORed with its handles'
	// handles are the handles the call referred to; inputClass and
	// inputUntrusted join their labels (handles.go).
	handles        []string
	inputClass     wire.DataClass
	inputUntrusted bool
	approver       string
	post           string
	hasPost        bool
	steps          []Step
}

// Step is one line of a decision's explanation: which of the five steps of
// DESIGN.md section 5 it belongs to, the grant it concerns ("" for none),
// and what happened.
type Step struct {
	Number int
	Grant  string
	Text   string
}

func (s Step) String() string {
	if s.Grant == "" {
		return fmt.Sprintf("step %d: %s", s.Number, s.Text)
	}
	return fmt.Sprintf("step %d: %s: %s", s.Number, s.Grant, s.Text)
}

// Errors Runnable returns; each is wrapped with the details.
var (
	ErrZeroDecision = errors.New("policy: zero Decision: only policy.Decide makes a valid one")
	ErrDenied       = errors.New("policy: the call was denied")
	ErrNotApproved  = errors.New("policy: the call waits for the owner's approval")
)

func (d Decision) Outcome() Outcome { return d.outcome }

// Reason says why a Denied decision denied; it is "" for any other.
func (d Decision) Reason() wire.DenyReason { return d.reason }

// Grant returns the grant that decided, if one did: the chosen grant, the
// deny grant, the expired grant, or the grant the taint or the untrusted
// rule ruled out.
func (d Decision) Grant() (Grant, bool) { return d.grant, !d.grant.IsZero() }

// Call is the call as requested, decoded once: a handle stands there as
// its reference ("handle:h1"). The audit record and the approval's
// arguments show it.
func (d Decision) Call() wire.Call { return d.call }

// Input is the call as it was decided and runs: Call with each handle's
// content in place of its reference (Call itself when it referred to
// none). Constraints matched it, the approval's subject shows it, and the
// runner runs it, never arguments of its own.
func (d Decision) Input() wire.Call { return d.input }

// Taint and At are the session taint and the time the decision was made at.
func (d Decision) Taint() wire.DataClass { return d.taint }
func (d Decision) At() wire.Timestamp    { return d.at }

// Explain returns the steps that led to the decision, for `boxmaker grants
// explain`: every grant for the tool, why it was or was not a candidate,
// and where it was dropped.
func (d Decision) Explain() []Step { return append([]Step(nil), d.steps...) }

// IsZero reports whether d is the zero Decision, which nothing may run under.
func (d Decision) IsZero() bool { return d.outcome == 0 }

// Approver returns who approved an Approved decision and, for Mattermost,
// the post; "" otherwise.
func (d Decision) Approver() (approver string, post *string) {
	if !d.hasPost {
		return d.approver, nil
	}
	p := d.post
	return d.approver, &p
}

// Runnable is the tool runner's check: it returns the grant the call runs
// under for an Allowed or Approved decision, and an error for the zero
// Decision, a denial, or an ask the owner has not approved. The runner then
// runs Input, never arguments of its own.
func (d Decision) Runnable() (Grant, error) {
	switch {
	case d.outcome == 0 || d.grant.IsZero() && d.outcome != Denied:
		return Grant{}, ErrZeroDecision
	case d.outcome == Denied:
		return Grant{}, fmt.Errorf("%w: %s", ErrDenied, d.reason)
	case d.outcome == AwaitsApproval:
		return Grant{}, fmt.Errorf("%w (grant %s)", ErrNotApproved, d.grant.id)
	case d.outcome == Allowed && d.runsUnder(Auto), d.outcome == Approved && d.approver != "" && d.runsUnder(Ask):
		return d.grant, nil
	}
	return Grant{}, ErrZeroDecision
}

// runsUnder reports whether d holds parsed arguments and goes by mode m
// under a grant that allows it: one of mode m, or, for Ask, an auto grant
// whose when_untrusted = "ask" held it back. It is a second check, after
// the outcome, that only Decide made d.
func (d Decision) runsUnder(m Mode) bool {
	heldBack := m == Ask && d.grant.mode == Auto && d.grant.whenUntrusted == AskWhenUntrusted
	return d.mode == m && (d.grant.mode == m || heldBack) && d.input.Decoded()
}

// Approve turns an ask decision into an approved one. approver is
// "local:<user>" (from SO_PEERCRED, with post nil) or "mm:<user id>" (with
// the id of the Mattermost post the approval came through).
//
// brokerd passes a fresh Decide for the approved call, not the decision it
// showed the owner, because taint or expiry may have changed while the
// owner read it; and it approves only if the fresh decision's grant is the
// one the approval showed.
func Approve(d Decision, approver string, post *string) (Decision, error) {
	if d.outcome != AwaitsApproval || d.grant.IsZero() {
		return Decision{}, fmt.Errorf("policy: only an ask decision can be approved, not %s", d.outcome)
	}
	if err := checkApprover(approver, post); err != nil {
		return Decision{}, err
	}
	d.outcome, d.approver = Approved, approver
	if post != nil {
		d.post, d.hasPost = *post, true
	}
	d.steps = append(d.Explain(), Step{Number: 5, Grant: d.grant.id, Text: "approved by " + approver})
	return d, nil
}

// Refuse turns an ask decision into a denial because the owner refused
// (wire.ApprovalRefused) or did not answer in time (wire.ApprovalExpired).
func Refuse(d Decision, reason wire.DenyReason) (Decision, error) {
	if d.outcome != AwaitsApproval || d.grant.IsZero() {
		return Decision{}, fmt.Errorf("policy: only an ask decision can be refused, not %s", d.outcome)
	}
	if reason != wire.ApprovalRefused && reason != wire.ApprovalExpired {
		return Decision{}, fmt.Errorf("policy: %q is not a reason to refuse an approval", reason)
	}
	d.outcome, d.reason = Denied, reason
	d.steps = append(d.Explain(), Step{Number: 5, Grant: d.grant.id, Text: "not approved: " + string(reason)})
	return d, nil
}

// checkApprover accepts local:<user> without a post, or mm:<user id> with
// one; names and ids are plain printable tokens.
func checkApprover(approver string, post *string) error {
	kind, who, _ := strings.Cut(approver, ":")
	switch {
	case kind != "local" && kind != "mm":
		return fmt.Errorf("policy: approver %q must be local:<user> or mm:<user id>", approver)
	case !plainToken(who):
		return fmt.Errorf("policy: approver %q: %q is not a user name or id", approver, who)
	case kind == "local" && post != nil:
		return errors.New("policy: a local approval has no Mattermost post")
	case kind == "mm" && (post == nil || !plainToken(*post)):
		return errors.New("policy: a Mattermost approval needs the id of its post")
	}
	return nil
}

func plainToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Record is the decision as the audit log stores it. An ask decision has
// none yet: it is recorded once approved or refused.
func (d Decision) Record() (wire.DecisionRecord, error) {
	switch d.outcome {
	case Allowed:
		return wire.DecisionAllowed{Grant: d.grant.id}, nil
	case Approved:
		approver, post := d.Approver()
		return wire.DecisionApproved{Grant: d.grant.id, Approver: approver, Post: post}, nil
	case Denied:
		rec := wire.DecisionDenied{Reason: d.reason}
		if !d.grant.IsZero() {
			id := d.grant.id
			rec.Grant = &id
		}
		return rec, nil
	case AwaitsApproval:
		return nil, errors.New("policy: an ask decision is recorded once the owner answers")
	}
	return nil, ErrZeroDecision
}

package policy

import (
	"fmt"
	"slices"

	"boxmaker/wire"
)

// Mode says what a matching grant does with a call.
type Mode uint8

const (
	Auto Mode = iota + 1 // run now
	Ask                  // run once the owner approves
	Deny                 // refuse, whatever else matches
)

var modeNames = [...]string{Auto: "auto", Ask: "ask", Deny: "deny"}

// ParseMode accepts "auto", "ask" or "deny", lowercase.
func ParseMode(s string) (Mode, error) {
	for m := Auto; m <= Deny; m++ {
		if modeNames[m] == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("mode must be auto, ask or deny, not %q", s)
}

func (m Mode) String() string {
	if m < Auto || m > Deny {
		return fmt.Sprintf("Mode(%d)", uint8(m))
	}
	return modeNames[m]
}

// UntrustedRule is a grant's when_untrusted: what an auto or ask grant does
// once its session has read untrusted data (DESIGN.md section 12).
type UntrustedRule uint8

const (
	Unchanged         UntrustedRule = iota // the default: the grant's mode holds
	AskWhenUntrusted                       // an auto grant waits for approval instead
	DenyWhenUntrusted                      // the grant is dropped from the decision
)

var untrustedRuleNames = [...]string{Unchanged: "", AskWhenUntrusted: "ask", DenyWhenUntrusted: "deny"}

// parseUntrustedRule accepts "ask" or "deny", lowercase.
func parseUntrustedRule(s string) (UntrustedRule, error) {
	switch s {
	case "ask":
		return AskWhenUntrusted, nil
	case "deny":
		return DenyWhenUntrusted, nil
	}
	return Unchanged, fmt.Errorf(`when_untrusted must be "ask" or "deny", not %q; leave it out to keep the mode in an untrusted session`, s)
}

// String is the value as a grant file writes it, "" for Unchanged.
func (r UntrustedRule) String() string {
	if int(r) >= len(untrustedRuleNames) {
		return fmt.Sprintf("UntrustedRule(%d)", uint8(r))
	}
	return untrustedRuleNames[r]
}

// Constraints are a grant's [constraints] table as the owner wrote it.
type Constraints struct {
	Paths    []string
	Hosts    []string
	Patterns []string
}

// Grant is one grant file, parsed and checked. Only ParseGrant, LoadFile and
// LoadDir make one; the zero Grant belongs to no tool and matches nothing.
type Grant struct {
	id            string
	tool          wire.Tool
	mode          Mode
	maxTaint      wire.DataClass
	resultClass   wire.DataClass
	untrusted     bool
	whenUntrusted UntrustedRule
	expires       wire.Timestamp
	hasExpiry     bool
	secret        string
	constraints   Constraints
	matcher       matcher
	jobs          []string  // nil: every session; else only sessions of these jobs
	handleResult  bool      // result = "handle": brokerd keeps the result, the model gets a handle
	declassify    bool      // inspect only: the answer takes result_class, not the handle's class
	mcp           *mcpGrant // an MCP grant (mcpgrant.go); nil for a built-in tool
}

// ID is the grant file's stem.
func (g Grant) ID() string { return g.id }

// Tool is the name of the tool the grant is for.
func (g Grant) Tool() string { return g.tool.Name }

func (g Grant) Mode() Mode                  { return g.mode }
func (g Grant) MaxTaint() wire.DataClass    { return g.maxTaint }
func (g Grant) ResultClass() wire.DataClass { return g.resultClass }
func (g Grant) Untrusted() bool             { return g.untrusted }

// WhenUntrusted is the grant's when_untrusted; Unchanged when it has none.
func (g Grant) WhenUntrusted() UntrustedRule { return g.whenUntrusted }

// Expires returns the grant's expiry, if it has one.
func (g Grant) Expires() (wire.Timestamp, bool) { return g.expires, g.hasExpiry }

// Secret returns the name of the secret the grant injects, if any.
func (g Grant) Secret() (string, bool) { return g.secret, g.secret != "" }

// Constraints returns a copy of the grant's constraints as written.
func (g Grant) Constraints() Constraints {
	return Constraints{
		Paths:    slices.Clone(g.constraints.Paths),
		Hosts:    slices.Clone(g.constraints.Hosts),
		Patterns: slices.Clone(g.constraints.Patterns),
	}
}

// Jobs returns the ids of the jobs the grant is limited to, or nil when it
// applies in every session. A grant with jobs applies only in sessions
// brokerd minted for those jobs (DESIGN.md section 13): Decide does not
// know sessions, so brokerd narrows the grants with GrantsForJob first.
func (g Grant) Jobs() []string { return slices.Clone(g.jobs) }

// IsZero reports whether g is the zero Grant, which no parser returns.
func (g Grant) IsZero() bool { return g.matcher == nil }

// ExpiredAt reports whether g has expired at now. A grant whose expiry
// equals now has expired: the instant written is the first one it no
// longer covers.
func (g Grant) ExpiredAt(now wire.Timestamp) bool { return g.hasExpiry && g.expires <= now }

// UsableIn reports whether g could let a call run, now or once the owner
// approves, in a session in state s at now: what steps 2 to 4 and the
// untrusted rule of Decide ask of a grant alone (not deny, not expired,
// max_taint at least the taint, not dropped by when_untrusted = "deny").
// It knows no call's arguments, so a deny grant for the tool does not rule
// g out: tool_list names a tool when one of its grants is usable.
func (g Grant) UsableIn(s Session, now wire.Timestamp) bool {
	return !g.IsZero() && g.mode != Deny && !g.ExpiredAt(now) && g.allowsTaint(s.Taint()) && !g.droppedWhen(s.Untrusted())
}

// allowsTaint reports whether g applies at session taint t (step 4).
func (g Grant) allowsTaint(t wire.DataClass) bool { return g.maxTaint >= t }

// droppedWhen reports whether the untrusted rule drops g from a session
// whose untrusted flag is untrusted.
func (g Grant) droppedWhen(untrusted bool) bool {
	return untrusted && g.whenUntrusted == DenyWhenUntrusted
}

// asksWhen reports whether the untrusted rule makes auto grant g ask.
func (g Grant) asksWhen(untrusted bool) bool {
	return untrusted && g.mode == Auto && g.whenUntrusted == AskWhenUntrusted
}

// Covers reports whether args, already decoded for g's tool, satisfy g's
// constraints, and says why in a sentence for `grants explain`.
func (g Grant) Covers(args wire.ToolArgs) (bool, string) {
	if g.IsZero() {
		return false, "the zero Grant matches nothing"
	}
	if args == nil {
		return false, "no arguments"
	}
	if args.ToolName() != g.tool.Name {
		return false, fmt.Sprintf("arguments are for %s, not %s", args.ToolName(), g.tool.Name)
	}
	return g.matcher.match(newSubject(args.Subject()))
}

package bxctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"boxmaker/wire"
)

// denialWords says in a sentence what each deny reason means for the owner.
var denialWords = map[wire.DenyReason]string{
	wire.NoGrant:          "no grant allows it: no grant file for this tool matches these arguments",
	wire.GrantExpired:     "the grant that matched it has expired",
	wire.TaintTooHigh:     "the session has read data more sensitive than the grant's max_taint allows",
	wire.DeniedByGrant:    "a grant with mode = \"deny\" forbids it",
	wire.ApprovalRefused:  "the approval was refused",
	wire.ApprovalExpired:  "nobody answered the approval before it expired, or the grants changed while it waited",
	wire.UntrustedSession: "the session has read untrusted data, and the grants left say when_untrusted = \"deny\"",
	wire.UnknownHandle:    "an argument names a handle this session does not have",
}

// explainable are the reasons the grant files decide, which
// `boxmaker grants explain` can show the reason for.
var explainable = map[wire.DenyReason]bool{
	wire.NoGrant: true, wire.GrantExpired: true, wire.TaintTooHigh: true,
	wire.DeniedByGrant: true, wire.UntrustedSession: true,
}

// denialHelp is the line after a denied call: what the denial means and,
// where the grants decided it, the command that shows why, with the call's
// own arguments and the session's taint as brokerd keeps it. The line goes
// through the sanitizer as every activity line does: the arguments are
// the model's.
func (c *chatter) denialHelp(e wire.ToolResultEvent) string {
	reason := wire.DenyReason(e.Detail)
	words, ok := denialWords[reason]
	if !ok {
		return fmt.Sprintf("call %d was denied (%s)", e.Call, e.Detail)
	}
	line := fmt.Sprintf("call %d was denied: %s", e.Call, words)
	if !explainable[reason] {
		return line
	}
	call, ok := c.calls[e.Call]
	if !ok {
		return line
	}
	return line + "; see why with: " + explainCommand(call, c.sessionState())
}

// explainCommand is the `boxmaker grants explain` line for a call made in
// a session at state.
func explainCommand(call wire.ToolCallEvent, state *wire.SessionStateResult) string {
	args := []string{"boxmaker", "grants", "explain", call.Tool, shellQuote(call.Arguments)}
	if state != nil {
		if state.Taint != wire.Private {
			args = append(args, "--taint", state.Taint.String())
		}
		if state.Untrusted {
			args = append(args, "--untrusted")
		}
	}
	return strings.Join(args, " ")
}

// sessionState asks brokerd for the session's taint, or nil.
func (c *chatter) sessionState() *wire.SessionStateResult {
	if c.session == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := callAdmin(ctx, c.paths, wire.SessionState{Session: *c.session})
	if st, ok := res.(wire.SessionStateResult); ok && err == nil {
		return &st
	}
	return nil
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

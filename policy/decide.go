package policy

import (
	"fmt"
	"iter"
	"slices"

	"boxmaker/wire"
)

// Request is one tool call as brokerd sees it: the call, decoded once
// (wire.Call), the session's taint and untrusted flag (from brokerd's own
// Session, never from loopd) and the time of the decision.
type Request struct {
	// Call is the call as brokerd decoded it at its door; Decide decodes
	// nothing again.
	Call wire.Call
	// Tool and Arguments are the call as text, for a caller that has
	// nothing else (grants explain, the decision table): Decide decodes
	// them once when Call is the zero Call, and ignores them otherwise.
	Tool      string
	Arguments string
	Taint     wire.DataClass
	Untrusted bool
	Now       wire.Timestamp
	// Handles are the session's handles the call refers to, by name
	// (HandleRefs says which): a reference to a name not here is denied
	// unknown_handle.
	Handles map[string]HandleValue
}

// SessionRequest is the Request for call in session s: its taint and
// untrusted flag come from s, never from the caller.
func SessionRequest(s Session, call wire.Call, now wire.Timestamp) Request {
	return Request{Call: call, Taint: s.Taint(), Untrusted: s.Untrusted(), Now: now}
}

// call is the Request's call: Call, or its text decoded once.
func (req Request) call() wire.Call {
	if req.Call.IsZero() {
		return wire.DecodeCall(req.Tool, req.Arguments)
	}
	return req.Call
}

// Decide applies the five steps of DESIGN.md section 5 to req over grants:
//
//  1. The candidates are the grants for the tool whose constraints match the
//     parsed arguments; arguments that do not parse match none. None:
//     denied no_grant.
//  2. An unexpired deny candidate wins: denied denied_by_grant (the lowest id).
//  3. Expired candidates are dropped (a grant expires at its expiry: expires
//     <= now). None left: denied grant_expired (the lowest expired id).
//  4. Candidates with max_taint below the session taint are dropped. None
//     left: denied taint_too_high, naming the grant step 5 would have chosen.
//     Then, in an untrusted session only (DESIGN.md section 12), candidates
//     with when_untrusted = "deny" are dropped (none left: denied
//     untrusted_session, naming the grant step 5 would have chosen) and auto
//     candidates with when_untrusted = "ask" become ask.
//  5. auto before ask, then the lowest id: Allowed or AwaitsApproval.
//
// Before step 1, each handle the arguments refer to (DESIGN.md section 15)
// is put in place of its reference and raises the taint and the untrusted
// flag the call is decided at; a handle the session lacks is denied
// unknown_handle.
//
// grants may be in any order. The error is only for an invalid taint.
func Decide(grants []Grant, req Request) (Decision, error) {
	if !req.Taint.Valid() {
		return Decision{}, fmt.Errorf("policy: session taint %v is not a data class", req.Taint)
	}
	call := req.call()
	d := Decision{call: call, input: call, taint: req.Taint, untrusted: req.Untrusted, at: req.Now}
	if name, ok := d.resolveHandles(req.Handles); !ok {
		return d.deny(wire.UnknownHandle, Grant{}, 1, fmt.Sprintf("the session has no handle %s", short(name))), nil
	}
	candidates := d.candidates(grants)
	return d.decideAmong(candidates, req.Now), nil
}

// decideAmong is what follows step 1 for its candidates (sorted by id):
// no candidate is no_grant, then steps 2 to 5. Built-in and MCP tools
// share it; only how step 1 finds the candidates differs.
func (d Decision) decideAmong(candidates []Grant, now wire.Timestamp) Decision {
	if len(candidates) == 0 {
		return d.deny(wire.NoGrant, Grant{}, 1, "no grant matches")
	}
	for _, g := range candidates {
		if g.mode == Deny && !g.ExpiredAt(now) {
			return d.deny(wire.DeniedByGrant, g, 2, "an unexpired deny grant matches; it wins")
		}
	}
	d.note(2, "", "no unexpired deny grant matches")
	live, expired := d.dropExpired(candidates)
	if len(live) == 0 {
		return d.deny(wire.GrantExpired, expired[0], 3, "every candidate has expired; this is the lowest id")
	}
	fit := d.dropTainted(live)
	if len(fit) == 0 {
		return d.deny(wire.TaintTooHigh, choose(live), 4, "the session taint is above every candidate's max_taint; step 5 would have chosen this grant")
	}
	left := d.applyUntrusted(d.untrusted, fit)
	if len(left) == 0 {
		return d.deny(wire.UntrustedSession, choose(fit), 4, `the session is untrusted and every candidate left says when_untrusted = "deny"; step 5 would have chosen this grant`)
	}
	return d.choose(left)
}

// candidates is step 1: the grants for the tool whose constraints match,
// sorted by id.
func (d *Decision) candidates(grants []Grant) []Grant {
	tool, ok := d.input.Tool()
	if !ok {
		d.note(1, "", fmt.Sprintf("no tool named %s", nameText(d.input.Name())))
		return nil
	}
	args := d.input.Args()
	if args == nil {
		d.note(1, "", clip(d.input.Err().Error())+"; arguments that do not parse match no grant")
		return nil
	}
	subject := newSubject(args.Subject())
	var candidates []Grant
	for g := range sortedForTool(grants, tool.Name) {
		matched, why := g.matcher.match(subject)
		if matched {
			candidates = append(candidates, g)
			d.note(1, g.id, "candidate: "+why)
		} else {
			d.note(1, g.id, "not a candidate: "+why)
		}
	}
	return candidates
}

// sortedForTool returns the grants for tool in id order. Grants usually come
// from LoadDir or Dir, already in id order, and brokerd decides over all of
// them on every call: then they are read in place, without a copy of each
// grant for the tool; otherwise the tool's grants are copied and sorted.
func sortedForTool(grants []Grant, tool string) iter.Seq[Grant] {
	forTool := func(g *Grant) bool { return !g.IsZero() && g.tool.Name == tool }
	if !slices.IsSortedFunc(grants, byID) {
		var mine []Grant
		for i := range grants {
			if forTool(&grants[i]) {
				mine = append(mine, grants[i])
			}
		}
		sortByID(mine)
		grants = mine
	}
	return func(yield func(Grant) bool) {
		for i := range grants {
			if forTool(&grants[i]) && !yield(grants[i]) {
				return
			}
		}
	}
}

// dropExpired is step 3.
func (d *Decision) dropExpired(candidates []Grant) (live, expired []Grant) {
	for _, g := range candidates {
		if g.ExpiredAt(d.at) {
			expired = append(expired, g)
			d.note(3, g.id, fmt.Sprintf("dropped: expired at %s (now %s)", g.expires, d.at))
		} else {
			live = append(live, g)
		}
	}
	return live, expired
}

// dropTainted is step 4.
func (d *Decision) dropTainted(live []Grant) []Grant {
	var fit []Grant
	for _, g := range live {
		if !g.allowsTaint(d.taint) {
			d.note(4, g.id, fmt.Sprintf("dropped: max_taint %s is below the session taint %s", g.maxTaint, d.taint))
		} else {
			fit = append(fit, g)
		}
	}
	return fit
}

// candidate is a grant left after step 4 and the mode it applies with: its
// own, or ask where when_untrusted = "ask" holds an auto grant back.
type candidate struct {
	grant Grant
	mode  Mode
}

// applyUntrusted is the untrusted rule, after step 4. A trusted session
// keeps every candidate at its own mode.
func (d *Decision) applyUntrusted(untrusted bool, fit []Grant) []candidate {
	var left []candidate
	ruled := false
	for _, g := range fit {
		ruled = ruled || g.whenUntrusted != Unchanged
		switch {
		case g.droppedWhen(untrusted):
			d.note(4, g.id, `dropped: the session is untrusted and the grant says when_untrusted = "deny"`)
		case g.asksWhen(untrusted):
			d.note(4, g.id, `auto becomes ask: the session is untrusted and the grant says when_untrusted = "ask"`)
			left = append(left, candidate{g, Ask})
		default:
			left = append(left, candidate{g, g.mode})
		}
	}
	switch {
	case untrusted && !ruled:
		d.note(4, "", "the session is untrusted; no candidate left sets when_untrusted")
	case !untrusted && ruled:
		d.note(4, "", "the session is trusted, so when_untrusted changes nothing")
	}
	return left
}

// choose picks from grants sorted by id: the first auto grant, else the
// first (ask) grant.
func choose(grants []Grant) Grant {
	if i := slices.IndexFunc(grants, func(g Grant) bool { return g.mode == Auto }); i >= 0 {
		return grants[i]
	}
	return grants[0]
}

// choose is step 5, over candidates sorted by id, each at the mode the
// untrusted rule left it.
func (d Decision) choose(left []candidate) Decision {
	i := slices.IndexFunc(left, func(c candidate) bool { return c.mode == Auto })
	if i >= 0 {
		d.grant, d.mode, d.outcome = left[i].grant, Auto, Allowed
		d.note(5, d.grant.id, "chosen: auto, the lowest id among auto candidates; runs now")
		return d
	}
	d.grant, d.mode, d.outcome = left[0].grant, Ask, AwaitsApproval
	if left[0].grant.mode == Auto {
		d.note(5, d.grant.id, "chosen: ask (an auto grant held back by when_untrusted), the lowest id (no auto candidate is left); waits for approval")
	} else {
		d.note(5, d.grant.id, "chosen: ask, the lowest id (no auto candidate is left); waits for approval")
	}
	return d
}

func (d Decision) deny(reason wire.DenyReason, g Grant, step int, why string) Decision {
	d.outcome, d.reason, d.grant = Denied, reason, g
	d.note(step, g.id, fmt.Sprintf("denied %s: %s", reason, why))
	return d
}

func (d *Decision) note(step int, grant, text string) {
	d.steps = append(d.steps, Step{Number: step, Grant: grant, Text: text})
}

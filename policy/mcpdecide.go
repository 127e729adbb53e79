package policy

import (
	"encoding/json"
	"fmt"
	"strings"

	"boxmaker/wire"
)

// DecideMCP decides a call of an MCP tool (DESIGN.md section 16): the steps
// of Decide, over the MCP grants for the tool, with the pin first. pin is
// the tool as pinned, or nil when it was never pinned or brokerd last saw
// a live definition that differs from its pin: then the call is denied
// unpinned_tool and never reaches the server. Arguments that do not meet
// the pinned input schema match no grant.
func DecideMCP(grants []Grant, req Request, pin *PinnedTool) (Decision, error) {
	if !req.Taint.Valid() {
		return Decision{}, fmt.Errorf("policy: session taint %v is not a data class", req.Taint)
	}
	asked := req.Call
	if asked.IsZero() {
		asked = wire.DecodeCall(req.Tool, req.Arguments) // no catalog row: kept as sent
	}
	name, arguments := asked.Name(), asked.Arguments()
	d := Decision{call: asked, input: asked, taint: req.Taint, untrusted: req.Untrusted, at: req.Now}
	server, tool, ok := wire.SplitMcpName(name)
	switch {
	case !ok:
		return d.deny(wire.NoGrant, Grant{}, 1, fmt.Sprintf("%s is not an MCP tool name (mcp__NAME__TOOL)", nameText(name))), nil
	case pin == nil || pin.Name != tool:
		return d.deny(wire.UnpinnedTool, Grant{}, 1, "the tool was never pinned, or its live definition differs from its pin: `boxmaker mcp diff` shows it"), nil
	}
	if err := pin.ValidateArguments(arguments); err != nil {
		d.note(1, "", clip(err.Error())+"; arguments that do not meet the pinned input schema match no grant")
		return d.deny(wire.NoGrant, Grant{}, 1, "no grant matches"), nil
	}
	var args any
	_ = json.Unmarshal([]byte(arguments), &args) // ValidateArguments parsed it
	if ref, ok := handleRefIn(args); ok {
		return d.deny(wire.NoGrant, Grant{}, 1, fmt.Sprintf("argument %s is a handle reference, and MCP tools take no handles (the server would get the handle's content undecided, or the bare reference): give the text itself", short(ref))), nil
	}
	d.call = wire.McpArgs{Server: server, Tool: tool, Canonical: arguments, Claims: pin.Claims()}.Call()
	d.input = d.call
	candidates := d.mcpCandidates(grants, server, tool, args)
	return d.decideAmong(candidates, req.Now), nil // steps 2 to 5, Decide's
}

// mcpCandidates is step 1: the MCP grants for the tool (by name or by the
// server's wildcard) each of whose argument constraints holds, by id.
func (d *Decision) mcpCandidates(grants []Grant, server wire.McpServer, tool wire.McpToolName, args any) []Grant {
	var mine []Grant
	for _, g := range grants {
		if g.mcp != nil && g.mcp.covers(server, tool) {
			mine = append(mine, g)
		}
	}
	sortByID(mine)
	var out []Grant
	for _, g := range mine {
		if ok, why := g.mcp.match(args); ok {
			out = append(out, g)
			d.note(1, g.id, "candidate: "+why)
		} else {
			d.note(1, g.id, "not a candidate: "+why)
		}
	}
	return out
}

// match checks every pointer constraint: present, a string, and matching.
func (m *mcpGrant) match(args any) (bool, string) {
	if len(m.args) == 0 {
		return true, "it constrains no argument"
	}
	for _, pc := range m.args {
		v, ok := pointerValue(args, pc.tokens)
		if !ok {
			return false, fmt.Sprintf("argument %s is absent or not a string", pc.pointer)
		}
		if ok, why := pc.m.match(newSubject(v)); !ok {
			return false, fmt.Sprintf("argument %s: %s", pc.pointer, why)
		}
	}
	return true, "every constrained argument matches"
}

// handleRefIn finds a string anywhere in args that reads as a handle
// reference ("handle:h1"), as the built-in tools would substitute it.
// They are refused, not substituted, until a substitution inside MCP
// arguments is decided at the handle's taint (docs/decisions.md).
func handleRefIn(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, strings.HasPrefix(x, wire.HandlePrefix)
	case map[string]any:
		for _, e := range x {
			if ref, ok := handleRefIn(e); ok {
				return ref, true
			}
		}
	case []any:
		for _, e := range x {
			if ref, ok := handleRefIn(e); ok {
				return ref, true
			}
		}
	}
	return "", false
}

package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"boxmaker/wire"
)

// MCP grants (DESIGN.md section 16): tool = "mcp__NAME__TOOL" or
// "mcp__NAME__*", constrained by JSON pointer into the arguments:
//
//	[constraints.arguments."/path"]
//	paths = ["/srv/share/public"]
//
// Each named pointer must be present in the call, a string, and match with
// the matching of section 5 (paths: absolute, by whole components; hosts:
// the URL's host; patterns: RE2 over the whole string).

// mcpGrant is what an MCP grant adds to a Grant.
type mcpGrant struct {
	server wire.McpServer
	tool   wire.McpToolName // "" for every pinned tool of the server
	args   []pointerConstraint
}

type pointerConstraint struct {
	pointer string
	tokens  []string
	key     string // paths, hosts or patterns
	m       matcher
}

// argConstraintsFile is one [constraints.arguments."/pointer"] table.
type argConstraintsFile struct {
	Paths    []string `toml:"paths"`
	Hosts    []string `toml:"hosts"`
	Patterns []string `toml:"patterns"`
}

// parseMCPTool reads an MCP grant's tool key.
func parseMCPTool(name string) (*mcpGrant, error) {
	rest, _ := strings.CutPrefix(name, wire.McpToolPrefix)
	server, tool, ok := strings.Cut(rest, "__")
	if !ok {
		return nil, fmt.Errorf("an MCP tool is mcp__NAME__TOOL or mcp__NAME__*, not %s", nameText(name))
	}
	if err := wire.CheckMcpServer(server); err != nil {
		return nil, fmt.Errorf("tool %s: %v", nameText(name), err)
	}
	g := &mcpGrant{server: wire.McpServer(server)}
	if tool != "*" {
		if err := wire.McpToolName(tool).Check(); err != nil {
			return nil, fmt.Errorf("tool %s: %v", nameText(name), err)
		}
		g.tool = wire.McpToolName(tool)
	}
	return g, nil
}

// setMCPConstraints compiles an MCP grant's argument constraints. An MCP
// grant has no top-level paths, hosts or patterns: it names the argument.
func (g *Grant) setMCPConstraints(f grantFile) []problem {
	g.matcher = noneMatcher{} // the catalog's Decide never matches an MCP grant
	if f.Examples != nil {
		return []problem{{"examples", "MCP grants take no examples; try a call with `boxmaker grants explain`"}}
	}
	if f.Constraints == nil {
		return nil
	}
	c := f.Constraints
	var probs []problem
	if c.Paths != nil || c.Hosts != nil || c.Patterns != nil {
		probs = append(probs, problem{"constraints", `an MCP grant constrains its arguments by JSON pointer: [constraints.arguments."/path"] paths = [...]`})
	}
	pointers := make([]string, 0, len(c.Arguments))
	for p := range c.Arguments {
		pointers = append(pointers, p)
	}
	slices.Sort(pointers)
	for _, p := range pointers {
		pc, more := compilePointer(p, g.mode, c.Arguments[p])
		probs = append(probs, more...)
		if len(more) == 0 {
			g.mcp.args = append(g.mcp.args, pc)
		}
	}
	return probs
}

func compilePointer(p string, mode Mode, f argConstraintsFile) (pointerConstraint, []problem) {
	key := "constraints.arguments." + strconv.Quote(p)
	tokens, err := parsePointer(p)
	if err != nil {
		return pointerConstraint{}, []problem{{key, err.Error()}}
	}
	lists := map[string][]string{"paths": f.Paths, "hosts": f.Hosts, "patterns": f.Patterns}
	var set []string
	for _, k := range dimensionKeys {
		if lists[k] != nil {
			set = append(set, k)
		}
	}
	if len(set) != 1 {
		return pointerConstraint{}, []problem{{key, fmt.Sprintf("argument %s takes exactly one of paths, hosts or patterns", p)}}
	}
	if len(lists[set[0]]) == 0 {
		return pointerConstraint{}, []problem{{key, fmt.Sprintf("argument %s: an empty %s list matches nothing", p, set[0])}}
	}
	dims := map[string]wire.Dimension{"paths": wire.AbsolutePathsDimension, "hosts": wire.HostsDimension, "patterns": wire.PatternsDimension}
	m, errs := compileDimensionFor(wire.Tool{Name: "argument " + p, Dimension: dims[set[0]]}, mode, lists[set[0]])
	var probs []problem
	for _, err := range errs {
		probs = append(probs, problem{key, err.Error()})
	}
	return pointerConstraint{pointer: p, tokens: tokens, key: set[0], m: m}, probs
}

// parsePointer reads an RFC 6901 JSON pointer to a member: "" (the whole
// object) is refused, since the arguments are an object and not a string.
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("argument pointer %q must start with / (a JSON pointer, such as \"/path\")", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("argument pointer %q: ~ must be written ~0 and / ~1", p)
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

type noneMatcher struct{}

func (noneMatcher) match(*subject) (bool, string) { return false, "an MCP grant" }

// pointerValue is the string at tokens in v; ok is false when the member is
// absent or not a string.
func pointerValue(v any, tokens []string) (string, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return "", false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != t {
				return "", false
			}
			v = x[i]
		default:
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}

// schemaDeclares reports whether an input schema declares the member at
// tokens: through properties for objects and items for arrays.
func schemaDeclares(schema string, tokens []string) bool {
	var s any
	if json.Unmarshal([]byte(schema), &s) != nil {
		return false
	}
	for _, t := range tokens {
		obj, _ := s.(map[string]any)
		if props, ok := obj["properties"].(map[string]any); ok {
			if s, ok = props[t]; ok {
				continue
			}
		}
		if items, ok := obj["items"].(map[string]any); ok {
			if _, err := strconv.Atoi(t); err == nil {
				s = items
				continue
			}
		}
		return false
	}
	return true
}

// CheckMCPGrant reports the pointers of g that pins' schema does not
// declare, for `grants check` and brokerd's load: such a grant is an
// error. A grant for a server that is declared but not pinned is valid and
// matches nothing until the server is pinned.
func CheckMCPGrant(g Grant, declared func(wire.McpServer) bool, pins map[wire.McpServer]*Pins) error {
	m := g.mcp
	if m == nil {
		return nil
	}
	if !declared(m.server) {
		return fmt.Errorf("grant %s: config.toml declares no MCP server %s", g.id, m.server)
	}
	p, ok := pins[m.server]
	if !ok {
		return nil
	}
	for _, pc := range m.args {
		for _, t := range p.Tools {
			if m.tool != "" && t.Name != m.tool {
				continue
			}
			if !schemaDeclares(t.InputSchema, pc.tokens) {
				return fmt.Errorf("grant %s: argument %s is not in the pinned input schema of %s", g.id, pc.pointer, wire.McpFullName(m.server, t.Name))
			}
		}
	}
	return nil
}

// IsMCP reports whether g is a grant for MCP tools.
func (g Grant) IsMCP() bool { return g.mcp != nil }

// covers reports whether g is for tool of server.
func (m *mcpGrant) covers(server wire.McpServer, tool wire.McpToolName) bool {
	return m.server == server && (m.tool == "" || m.tool == tool)
}

// MCPUsable reports whether any MCP grant for the tool could let a call
// run in a session in state s at now, for tool_list.
func MCPUsable(grants []Grant, server wire.McpServer, tool wire.McpToolName, s Session, now wire.Timestamp) bool {
	for _, g := range grants {
		if g.mcp != nil && g.mcp.covers(server, tool) && g.UsableIn(s, now) {
			return true
		}
	}
	return false
}

// ArgumentsText shows an MCP grant's argument constraints for `grants
// check`, as ` /path paths=["/srv"]`; "" for any other grant.
func (g Grant) ArgumentsText() string {
	if g.mcp == nil {
		return ""
	}
	var b strings.Builder
	for _, pc := range g.mcp.args {
		fmt.Fprintf(&b, " %s:%s", pc.pointer, pc.key)
	}
	return b.String()
}

// ArgValue is one argument a grant constrains, with the value the call
// gave it: what the owner's approval is about.
type ArgValue struct {
	Pointer, Value string
}

// ConstrainedArguments is, for an MCP grant, each argument pointer it
// constrains with its value in the canonical arguments (absent ones are
// left out: such a call matched no grant); nil for any other grant.
func (g Grant) ConstrainedArguments(canonical string) []ArgValue {
	if g.mcp == nil || len(g.mcp.args) == 0 {
		return nil
	}
	var args any
	if json.Unmarshal([]byte(canonical), &args) != nil {
		return nil
	}
	var out []ArgValue
	for _, pc := range g.mcp.args {
		if v, ok := pointerValue(args, pc.tokens); ok {
			out = append(out, ArgValue{Pointer: pc.pointer, Value: v})
		}
	}
	return out
}

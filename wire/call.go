package wire

import (
	"errors"
	"fmt"
)

// Call is one tool call decoded once, at the door: the tool's descriptor,
// its typed arguments and their canonical spelling. Every later stage (the
// decision, handle resolution, the runner, the mounts, inspect, the
// approval's subject, the audit record) takes the Call and reads what it
// needs from it, never the strings again and never the catalog by name.
//
// A call that does not decode is still a Call: it keeps the tool name and
// the arguments as they were sent (the audit records those), has no
// descriptor or no arguments, and says why in Err; it matches no grant.
//
// The descriptor is whatever Tool the caller decoded with: a catalog row
// (DecodeCall), or a descriptor built elsewhere, such as an MCP tool's from
// its pinned lock (Tool.Call). Nothing downstream asks which.
//
// Go cannot stop Call{}: the zero Call has no tool, no arguments and no
// error, and IsZero reports it; nothing may run it.
type Call struct {
	name      string   // the tool's name as sent
	tool      Tool     // its descriptor; Name == "" when none was found
	args      ToolArgs // nil when the arguments did not decode
	arguments string   // canonical when args != nil, else as sent
	err       error    // why there is no descriptor or no arguments
}

// ErrNoSuchTool is a Call's Err for a name that names no tool.
var ErrNoSuchTool = errors.New("no such tool")

// DecodeCall looks name up in the catalog, once, and decodes arguments
// strictly for that tool (Tool.Call).
func DecodeCall(name, arguments string) Call {
	t, ok := ToolByName(name)
	if !ok {
		return Call{name: name, arguments: arguments, err: fmt.Errorf("%w named %q", ErrNoSuchTool, name)}
	}
	return t.Call(arguments)
}

// Call decodes arguments strictly for t and spells them canonically
// (EncodeArgs): from then on the one spelling of the call, which brokerd
// decides on, shows the owner, records and runs, so that whitespace, key
// order and escapes cannot make an approval show something other than what
// runs. Arguments that do not decode stay as sent, with Err saying why.
func (t Tool) Call(arguments string) Call {
	c := Call{name: t.Name, tool: t, arguments: arguments}
	args, err := t.DecodeArgs(arguments)
	if err != nil {
		c.err = err
		return c
	}
	canonical, err := EncodeArgs(args)
	if err != nil {
		c.err = err
		return c
	}
	c.args, c.arguments = args, string(canonical)
	return c
}

// WithArgs is c with args in place of its arguments, spelled canonically:
// the call as it runs once brokerd has put each handle's content in place
// of its reference. args must be for c's tool.
func (c Call) WithArgs(args ToolArgs) (Call, error) {
	if c.args == nil || args == nil || args.ToolName() != c.tool.Name {
		return Call{}, fmt.Errorf("wire: arguments for %q do not fit a call of %q", toolNameOf(args), c.name)
	}
	canonical, err := EncodeArgs(args)
	if err != nil {
		return Call{}, err
	}
	c.args, c.arguments = args, string(canonical)
	return c, nil
}

func toolNameOf(args ToolArgs) string {
	if args == nil {
		return ""
	}
	return args.ToolName()
}

// Name is the tool's name as the call gave it.
func (c Call) Name() string { return c.name }

// Tool is the call's descriptor, and whether it has one.
func (c Call) Tool() (Tool, bool) { return c.tool, c.tool.Name != "" }

// Args is the call's typed arguments; nil when they did not decode.
func (c Call) Args() ToolArgs { return c.args }

// Arguments is the call's arguments as text: canonical when they decoded,
// as sent otherwise. The audit record and the sandbox's job hold these.
func (c Call) Arguments() string { return c.arguments }

// Err says why the call has no descriptor or no arguments; nil when it
// decoded.
func (c Call) Err() error { return c.err }

// Decoded reports whether the call has a descriptor and typed arguments.
func (c Call) Decoded() bool { return c.args != nil }

// IsZero reports whether c is the zero Call, made by no decoder.
func (c Call) IsZero() bool {
	return c.name == "" && c.arguments == "" && c.err == nil && c.args == nil
}

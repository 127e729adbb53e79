package wire

import (
	"fmt"
	"reflect"
	"slices"
)

// The tool catalog lives here, not in a role, so that brokerd (which decides
// and runs), toolkit (which does the work) and loopd (which shows the model
// the schemas) agree on one list without importing each other.

// Dimension names the argument of a tool that a grant's constraints read,
// and how that argument is read.
type Dimension uint8

const (
	// NoDimension: the tool has no constrained argument; a grant for it
	// matches every call whose arguments parse.
	NoDimension Dimension = iota
	// HostsDimension: the url argument, matched against [constraints] hosts.
	HostsDimension
	// AbsolutePathsDimension: an absolute path on the host, matched against
	// [constraints] paths.
	AbsolutePathsDimension
	// MemoryPathsDimension: a path relative to memory/, matched against
	// [constraints] paths; for a ScopedPaths tool (notes_search), the part
	// of memory/ its sandbox may see.
	MemoryPathsDimension
	// PatternsDimension: the command, matched against [constraints] patterns.
	PatternsDimension
)

// Key is the [constraints] key a grant uses for d: "hosts", "paths",
// "patterns", or "" for NoDimension.
func (d Dimension) Key() string {
	switch d {
	case HostsDimension:
		return "hosts"
	case AbsolutePathsDimension, MemoryPathsDimension:
		return "paths"
	case PatternsDimension:
		return "patterns"
	default:
		return ""
	}
}

// ToolArgs is the strictly decoded arguments of one tool call: one of
// HTTPFetchArgs, FileReadArgs, NotesReadArgs, NotesWriteArgs,
// NotesSearchArgs, ShellArgs, ConsultArgs or InspectArgs. The set is closed.
type ToolArgs interface {
	// Subject is the argument the tool's Dimension reads (the URL, the path
	// or the command), or "" for a tool without one and for a ScopedPaths
	// tool, whose call names no path.
	Subject() string
	// ToolName is the name of the tool these arguments are for.
	ToolName() string
	isToolArgs()
}

// HTTPFetchArgs are http_fetch's arguments.
type HTTPFetchArgs struct {
	URL string `json:"url"`
}

// FileReadArgs are file_read's arguments; Path is absolute.
type FileReadArgs struct {
	Path string `json:"path"`
}

// NotesReadArgs are notes_read's arguments; Path is relative to memory/.
type NotesReadArgs struct {
	Path string `json:"path"`
}

// NotesWriteArgs are notes_write's arguments; Path is relative to memory/.
type NotesWriteArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// NotesSearchArgs are notes_search's arguments.
type NotesSearchArgs struct {
	Query string `json:"query"`
}

// ShellArgs are shell's arguments; Command is run by /bin/sh in the sandbox.
type ShellArgs struct {
	Command string `json:"command"`
}

// ConsultArgs are consult's arguments; Prompt goes to the hosted model.
type ConsultArgs struct {
	Prompt string `json:"prompt"`
}

func (a HTTPFetchArgs) Subject() string  { return a.URL }
func (a FileReadArgs) Subject() string   { return a.Path }
func (a NotesReadArgs) Subject() string  { return a.Path }
func (a NotesWriteArgs) Subject() string { return a.Path }
func (NotesSearchArgs) Subject() string  { return "" }
func (a ShellArgs) Subject() string      { return a.Command }
func (ConsultArgs) Subject() string      { return "" }

func (HTTPFetchArgs) ToolName() string   { return "http_fetch" }
func (FileReadArgs) ToolName() string    { return "file_read" }
func (NotesReadArgs) ToolName() string   { return "notes_read" }
func (NotesWriteArgs) ToolName() string  { return "notes_write" }
func (NotesSearchArgs) ToolName() string { return "notes_search" }
func (ShellArgs) ToolName() string       { return "shell" }
func (ConsultArgs) ToolName() string     { return "consult" }

func (HTTPFetchArgs) isToolArgs()   {}
func (FileReadArgs) isToolArgs()    {}
func (NotesReadArgs) isToolArgs()   {}
func (NotesWriteArgs) isToolArgs()  {}
func (NotesSearchArgs) isToolArgs() {}
func (ShellArgs) isToolArgs()       {}
func (ConsultArgs) isToolArgs()     {}

// Tool describes one tool: what the model is told, how its arguments are
// read, and what its sandbox holds. Only the catalog's Tools decode; a Tool
// built by hand refuses to.
type Tool struct {
	Name        string
	Description string    // one line, for the model
	Schema      string    // JSON schema of the arguments object, for the model
	Dimension   Dimension // what its grants' constraints read
	Sandbox     Sandbox   // what brokerd mounts and connects, and toolkit confines itself to
	// InBroker says brokerd answers the tool itself (inspect): it has no
	// sandbox, no toolkit code, and Sandbox is the zero value.
	InBroker bool
	decode   func(arguments []byte) (ToolArgs, error)
}

// ScopedPaths reports whether the grant's paths say which part of memory/
// the sandbox mounts, not which argument the call may name; the call names
// none, so every call whose arguments parse is inside every grant for the
// tool, and the grant chosen decides what is searched (notes_search).
func (t Tool) ScopedPaths() bool { return t.Sandbox.Mount.Scoped() }

// WritesPaths reports whether the sandbox mounts what the grant's paths
// name writable (notes_write), so that those paths must never reach
// memory/core.md.
func (t Tool) WritesPaths() bool { return t.Sandbox.Mount.Writable() }

// toolCatalog is every tool, one row each. A new tool is a row here (with
// its argument type above), its code in roles/toolkit (a file and a line in
// its implementations map), and the tests that pin it: a row of
// designTable in tools_test.go and the toolkit tests of what it does.
// brokerd, toolrun and toolkit read the rest from the row.
var toolCatalog = []Tool{
	{
		Name:        "http_fetch",
		Description: "Fetch a web page over https and return its text.",
		Schema:      `{"type":"object","properties":{"url":{"type":"string","description":"The https URL to fetch."}},"required":["url"],"additionalProperties":false}`,
		Dimension:   HostsDimension,
		Sandbox:     Sandbox{Egress: Egress{To: GrantHosts, Method: "GET"}},
		decode:      decodeArgs[HTTPFetchArgs],
	},
	{
		Name:        "file_read",
		Description: "Read a file on the host, named by its absolute path.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string","description":"The absolute path of the file."}},"required":["path"],"additionalProperties":false}`,
		Dimension:   AbsolutePathsDimension,
		Sandbox:     Sandbox{Mount: MountCoveringEntry},
		decode:      decodeArgs[FileReadArgs],
	},
	{
		Name:        "notes_read",
		Description: "Read one of the owner's notes, named by its path inside the notes directory.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string","description":"The note's path, relative to the notes directory."}},"required":["path"],"additionalProperties":false}`,
		Dimension:   MemoryPathsDimension,
		Sandbox:     Sandbox{Mount: MountNote},
		decode:      decodeArgs[NotesReadArgs],
	},
	{
		Name:        "notes_write",
		Description: "Create or replace one of the owner's notes, named by its path inside the notes directory.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string","description":"The note's path, relative to the notes directory."},"content":{"type":"string","description":"The note's full new text."}},"required":["path","content"],"additionalProperties":false}`,
		Dimension:   MemoryPathsDimension,
		Sandbox:     Sandbox{Mount: MountWritableNoteEntry},
		decode:      decodeArgs[NotesWriteArgs],
	},
	{
		Name:        "notes_search",
		Description: "Search the owner's notes for words and return the matching passages.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"The words to search for."}},"required":["query"],"additionalProperties":false}`,
		Dimension:   MemoryPathsDimension,
		Sandbox:     Sandbox{Mount: MountGrantNotes},
		decode:      decodeArgs[NotesSearchArgs],
	},
	{
		Name:        "shell",
		Description: "Run a command with /bin/sh in a sandbox and return its output.",
		Schema:      `{"type":"object","properties":{"command":{"type":"string","description":"The command line for /bin/sh."}},"required":["command"],"additionalProperties":false}`,
		Dimension:   PatternsDimension,
		Sandbox:     Sandbox{System: true},
		decode:      decodeArgs[ShellArgs],
	},
	{
		Name:        "consult",
		Description: "Ask a larger hosted model and return its answer.",
		Schema:      `{"type":"object","properties":{"prompt":{"type":"string","description":"The full question, with any context it needs."}},"required":["prompt"],"additionalProperties":false}`,
		Dimension:   NoDimension,
		Sandbox:     Sandbox{Egress: Egress{To: ConsultEndpoint, Method: "POST"}},
		decode:      decodeArgs[ConsultArgs],
	},
	{
		Name:        "inspect",
		Description: "Ask a typed question about a handle (a result kept out of this conversation) and get only the answer: true/false, one of the values given, or an integer in a range.",
		Schema: `{"type":"object","properties":{"handle":{"type":"string","description":"The handle's name, such as h1."},"question":{"type":"string","description":"The question about the handle's content."},"answer":{"type":"object","description":"The answer's type: {\"type\":\"bool\"}, {\"type\":\"enum\",\"values\":[...]} (at most 16) or {\"type\":\"integer\",\"min\":0,\"max\":10}.",` +
			`"properties":{"type":{"type":"string","enum":["bool","enum","integer"]},"values":{"type":"array","items":{"type":"string"}},"min":{"type":"integer"},"max":{"type":"integer"}},"required":["type"]}},"required":["handle","question","answer"],"additionalProperties":false}`,
		Dimension: NoDimension,
		InBroker:  true,
		decode:    decodeInspect,
	},
}

// Tools returns the catalog, in a fixed order.
func Tools() []Tool { return slices.Clone(toolCatalog) }

// ToolByName returns the catalog's tool called name.
func ToolByName(name string) (Tool, bool) {
	for _, t := range toolCatalog {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// ToolNames lists the catalog's tool names, in catalog order.
func ToolNames() []string {
	names := make([]string, len(toolCatalog))
	for i, t := range toolCatalog {
		names[i] = t.Name
	}
	return names
}

// DecodeArgs parses arguments, the model's JSON object, strictly into t's
// argument type: unknown or missing members, null, trailing data and
// anything but an object are errors (CodeOf gives BadMessage).
func (t Tool) DecodeArgs(arguments string) (ToolArgs, error) {
	if t.decode == nil {
		return nil, fmt.Errorf("wire: %q is not a tool of the catalog", t.Name)
	}
	args, err := t.decode([]byte(arguments))
	if err != nil {
		return nil, argsError{tool: t.Name, err: err}
	}
	return args, nil
}

// DecodeToolArgs looks tool up in the catalog and decodes arguments for it.
func DecodeToolArgs(tool, arguments string) (ToolArgs, error) {
	t, ok := ToolByName(tool)
	if !ok {
		return nil, fmt.Errorf("no tool named %q", tool)
	}
	return t.DecodeArgs(arguments)
}

// EncodeArgs writes args canonically: after DecodeArgs, the one spelling of
// a call, which brokerd decides on, shows the owner, records and runs.
func EncodeArgs(args ToolArgs) ([]byte, error) {
	if args == nil {
		return nil, fmt.Errorf("wire: encode: no tool arguments")
	}
	v := reflect.New(reflect.TypeOf(args))
	v.Elem().Set(reflect.ValueOf(args))
	return encodeTop(v.Interface())
}

func decodeArgs[T ToolArgs](arguments []byte) (ToolArgs, error) {
	var v T
	if err := decodeTop(arguments, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// argsError names the tool whose arguments failed to decode, and keeps the
// codec's WireError in the chain so that CodeOf still answers bad_message.
type argsError struct {
	tool string
	err  error
}

func (e argsError) Error() string {
	detail := e.err.Error()
	if we, ok := e.err.(WireError); ok && we.Detail != "" {
		detail = we.Detail
	}
	return fmt.Sprintf("%s arguments: %s", e.tool, detail)
}

func (e argsError) Unwrap() error { return e.err }

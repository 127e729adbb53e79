package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MCP servers under the broker (DESIGN.md section 16). Two conversations
// carry them, both in the frames of section 4:
//   - brokerd and `boxmaker toolkit mcp` (the MCP client in the sandbox,
//     beside the server it starts): McpTools / McpToolsResult, McpToolCall
//     answered by McpNotice frames (never final) and one McpToolResult or
//     McpToolError. The client turns JSON-RPC into these bounded frames, so
//     brokerd never parses a byte the server chose as JSON-RPC.
//   - bxctl and brokerd's admin socket: McpPin, McpList and McpCall (the
//     owner's `boxmaker mcp pin|list|diff|call`).

// McpServer is a server's config name, NAME of [mcp.NAME]: 1 to 32 of
// [a-z0-9-]. It is part of every tool name the model sees.
type McpServer string

// MaxMcpServer is the longest server name, in bytes.
const MaxMcpServer = 32

// McpToolName is a tool's name as the server lists it: 1 to 128 of
// [A-Za-z0-9_.-] (the MCP specification's tool names).
type McpToolName string

// MaxMcpToolName is the longest tool name a server may list.
const MaxMcpToolName = 128

// McpText is text from a server, already made into what the model or the
// owner reads (a result's text, a definition's canonical JSON, a log line):
// valid UTF-8 of at most MaxMcpText bytes.
type McpText string

// Bounds of what toolkit mcp sends brokerd. A frame is at most MaxFrame, so
// a result's text is cut well below it: canonical JSON writes a control
// character as six bytes, and toolkit cuts again when the frame is over.
const (
	MaxMcpText = 512 << 10
	// MaxMcpNotice bounds one log or progress notification's line
	// (DESIGN.md section 16: at most 4 KiB).
	MaxMcpNotice = 4 << 10
	// MaxMcpTools bounds how many tools one server may list.
	MaxMcpTools = 256
)

// McpNoticeType says what a notification was: a log message, a progress
// report, or that the server's tool list changed.
type McpNoticeType string

const (
	McpLog         McpNoticeType = "log"
	McpProgress    McpNoticeType = "progress"
	McpListChanged McpNoticeType = "list_changed"
)

var mcpNoticeTypes = []McpNoticeType{McpLog, McpProgress, McpListChanged}

// UnpinnedTool: the call is for an MCP tool the owner never pinned, or
// whose live definition differs from its pin; it never reaches the server.
const UnpinnedTool DenyReason = "unpinned_tool"

// McpTools asks toolkit mcp for the server's tool list.
type McpTools struct{}

// McpToolsResult is the server as it describes itself: its serverInfo, the
// protocol version it speaks, and each tool's whole definition.
type McpToolsResult struct {
	Name     McpText      `json:"name"`     // serverInfo.name
	Version  McpText      `json:"version"`  // serverInfo.version
	Protocol McpText      `json:"protocol"` // the negotiated protocol version
	Tools    []McpToolDef `json:"tools"`
}

// McpToolDef is one listed tool: its name and its definition, the whole tool
// object (name, title, description, inputSchema, outputSchema, annotations)
// in canonical JSON, which is what a pin hashes.
type McpToolDef struct {
	Name       McpToolName `json:"name"`
	Definition McpText     `json:"definition"`
}

// McpToolCall asks toolkit mcp to call one tool with the canonical
// arguments brokerd decided on.
type McpToolCall struct {
	Tool      McpToolName `json:"tool"`
	Arguments McpText     `json:"arguments"`
}

// McpNotice is a notification the server sent while brokerd waited: one
// line, sanitized and bounded by toolkit, for brokerd's log. Never final.
type McpNotice struct {
	Type McpNoticeType `json:"type"`
	Text McpLine       `json:"text"`
}

// McpLine is one line for brokerd's log: at most MaxMcpNotice bytes of
// UTF-8 without control characters, so that it can neither end the log
// line early nor steer the terminal that shows the log.
type McpLine string

// McpToolResult is a call's result as text: text blocks in order, the
// structured content as JSON, and image, audio and binary resources named
// with their type and size, never inlined. IsError is the tool's own
// isError; Truncated says toolkit cut the text at its limit.
type McpToolResult struct {
	Text      McpText `json:"text"`
	IsError   bool    `json:"is_error"`
	Truncated bool    `json:"truncated"`
}

// McpToolError says the call did not run: the server answered with a
// JSON-RPC error, refused, crashed or broke the protocol. Ended says the
// instance ends after this frame (the server hung, died or broke the
// protocol): brokerd starts another for the next call.
type McpToolError struct {
	Message McpText `json:"message"`
	Ended   bool    `json:"ended"`
}

// McpPin asks brokerd to start a server exactly as for a call and list its
// tools, for the owner's `boxmaker mcp pin`.
type McpPin struct {
	Server McpServer `json:"server"`
}

// McpPinResult is the live list, or Error (Live null) when the server could
// not be started or listed.
type McpPinResult struct {
	Server McpServer       `json:"server"`
	Live   *McpToolsResult `json:"live"`
	Error  *McpText        `json:"error"`
}

// McpList asks brokerd for every declared server and the live list it last
// saw, for `boxmaker mcp list` and `mcp diff`.
type McpList struct{}

// McpListResult holds one entry per declared server.
type McpListResult struct {
	Servers []McpServerState `json:"servers"`
}

// McpServerState is one server: Live is the list brokerd last saw at an
// instance's start or on list_changed, null when it has not seen one.
type McpServerState struct {
	Server McpServer       `json:"server"`
	Live   *McpToolsResult `json:"live"`
}

// McpCall makes one call as the model would, in a session of its own, for
// `boxmaker mcp call`; brokerd answers with ToolResponse frames.
type McpCall struct {
	Server    McpServer   `json:"server"`
	Tool      McpToolName `json:"tool"`
	Arguments string      `json:"arguments"`
}

func (McpTools) isMessage()       {}
func (McpToolsResult) isMessage() {}
func (McpToolCall) isMessage()    {}
func (McpNotice) isMessage()      {}
func (McpToolResult) isMessage()  {}
func (McpToolError) isMessage()   {}
func (McpPin) isMessage()         {}
func (McpPinResult) isMessage()   {}
func (McpList) isMessage()        {}
func (McpListResult) isMessage()  {}
func (McpCall) isMessage()        {}

// McpToolPrefix leads every MCP tool's name as the model, the grants and the
// audit log see it: mcp__NAME__TOOL.
const McpToolPrefix = "mcp__"

// McpFullName is the tool's name as the model sees it.
func McpFullName(server McpServer, tool McpToolName) string {
	return McpToolPrefix + string(server) + "__" + string(tool)
}

// SplitMcpName splits mcp__NAME__TOOL; ok is false for any other name. A
// server name holds no "_", so the first "__" after the prefix ends it.
func SplitMcpName(full string) (McpServer, McpToolName, bool) {
	rest, ok := strings.CutPrefix(full, McpToolPrefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok := strings.Cut(rest, "__")
	if !ok || CheckMcpServer(server) != nil || checkMcpToolName(tool) != nil {
		return "", "", false
	}
	return McpServer(server), McpToolName(tool), true
}

// CheckMcpServer checks a config NAME of [mcp.NAME].
func CheckMcpServer(s string) error {
	if s == "" || len(s) > MaxMcpServer {
		return fmt.Errorf("an MCP server name is 1 to %d characters, not %d", MaxMcpServer, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Errorf("MCP server name %q: character %q is not one of [a-z0-9-]", s, c)
		}
	}
	return nil
}

func checkMcpToolName(s string) error {
	if s == "" || len(s) > MaxMcpToolName {
		return fmt.Errorf("an MCP tool name is 1 to %d characters, not %d", MaxMcpToolName, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("MCP tool name: character %q is not one of [A-Za-z0-9_.-]", c)
		}
	}
	return nil
}

func checkMcpText(s string) error {
	if len(s) > MaxMcpText {
		return fmt.Errorf("MCP text is at most %d bytes, not %d", MaxMcpText, len(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("MCP text is not valid UTF-8")
	}
	return nil
}

func (s McpServer) MarshalText() ([]byte, error) { return []byte(s), CheckMcpServer(string(s)) }
func (s *McpServer) UnmarshalText(b []byte) error {
	if err := CheckMcpServer(string(b)); err != nil {
		return err
	}
	*s = McpServer(b)
	return nil
}

func (n McpToolName) MarshalText() ([]byte, error) { return []byte(n), checkMcpToolName(string(n)) }
func (n *McpToolName) UnmarshalText(b []byte) error {
	if err := checkMcpToolName(string(b)); err != nil {
		return err
	}
	*n = McpToolName(b)
	return nil
}

func (t McpText) MarshalText() ([]byte, error) { return []byte(t), checkMcpText(string(t)) }
func (t *McpText) UnmarshalText(b []byte) error {
	if err := checkMcpText(string(b)); err != nil {
		return err
	}
	*t = McpText(b)
	return nil
}

func checkMcpLine(s string) error {
	if len(s) > MaxMcpNotice {
		return fmt.Errorf("an MCP notice is at most %d bytes, not %d", MaxMcpNotice, len(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("an MCP notice is not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 {
			return fmt.Errorf("an MCP notice holds control character %U", r)
		}
	}
	return nil
}

func (l McpLine) MarshalText() ([]byte, error) { return []byte(l), checkMcpLine(string(l)) }
func (l *McpLine) UnmarshalText(b []byte) error {
	if err := checkMcpLine(string(b)); err != nil {
		return err
	}
	*l = McpLine(b)
	return nil
}

func (n McpNoticeType) MarshalText() ([]byte, error) {
	return []byte(n), checkEnum(string(n), mcpNoticeTypes)
}

func (n *McpNoticeType) UnmarshalText(b []byte) error {
	if err := checkEnum(string(b), mcpNoticeTypes); err != nil {
		return fmt.Errorf("MCP notice type: %w", err)
	}
	*n = McpNoticeType(b)
	return nil
}

// Check reports whether n is a tool name the wire carries.
func (n McpToolName) Check() error { return checkMcpToolName(string(n)) }

// McpArgs are an MCP tool call's arguments once brokerd has checked them
// against the pinned input schema: the canonical JSON object, and the
// values of the pointers a grant constrains. Subject is the tool's full
// name, so that an approval's subject begins with it.
type McpArgs struct {
	Server    McpServer
	Tool      McpToolName
	Canonical string
	// Claims are the server's annotations as pinned ("readOnlyHint=true"),
	// shown to the owner as its claims, never trusted; "" for none.
	Claims string
}

func (a McpArgs) Subject() string  { return McpFullName(a.Server, a.Tool) }
func (a McpArgs) ToolName() string { return McpFullName(a.Server, a.Tool) }
func (McpArgs) isToolArgs()        {}

// Call is the MCP call these arguments make, as a Call like any other: its
// descriptor comes from the pin (the caller validated the arguments against
// the pinned input schema), not from the catalog, and has no sandbox row of
// the catalog's (brokerd runs it through its MCP instance). Downstream of
// the decision nothing asks where a descriptor came from but the runner,
// which takes McpArgs to the instance.
func (a McpArgs) Call() Call {
	name := a.ToolName()
	return Call{name: name, tool: Tool{Name: name}, args: a, arguments: a.Canonical}
}

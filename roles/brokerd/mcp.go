package brokerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/mcppool"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"

	"github.com/go-json-experiment/json/jsontext"
)

// MCP tools (DESIGN.md section 16): decided by DecideMCP over the MCP
// grants and the owner's pins in etc/mcp/, run in this session's instance
// of the server (mcppool), labelled, truncated and kept as handles like
// any result. brokerd reads the pins on every call, like the grants.

// Bounds of what the model is shown of a pinned tool.
const (
	mcpMaxDescription = 2048
	mcpMaxSchema      = 16 << 10
)

// mcpState is brokerd's side of its MCP servers.
type mcpState struct {
	pool *mcppool.Pool
	dir  string // etc/mcp, beside grants/
}

func (b *broker) openMCP(executable string) {
	sb := b.cfg.Sandbox
	lim := toolrun.MCPLimits{MemoryBytes: 1, Processes: 1, FileBytes: int64(sb.OutputBytes),
		CallMillis: sb.WallTime.D().Milliseconds(), StartMillis: 30_000,
		ResultBytes: int64(b.cfg.Broker.ResultMaxBytes) + 1, MaxLineBytes: 16 << 20}
	b.mcp = &mcpState{dir: filepath.Join(filepath.Dir(b.paths.Grants), "mcp"), pool: mcppool.New(mcppool.Config{
		Bwrap: sb.Bwrap, Executable: executable, MCP: b.cfg.MCP,
		System: toolrun.System{Paths: sb.SystemPaths, ShellPath: sb.ShellPath}, Limits: lim,
		Forbidden: b.runner.statePaths(), Log: func(s string) { b.log.Print(s) }, Channel: b.mcpChannel})}
}

// pins reads every declared server's lock; a bad one is left out and
// logged once (fail closed).
func (b *broker) pins() map[wire.McpServer]*policy.Pins {
	pins, bad := policy.LoadLocks(b.mcp.dir, b.cfg.MCP.Names())
	for _, err := range bad {
		b.logOnce("mcp: lock ignored: " + err.Error())
	}
	return pins
}

// mcpGrants are the session's grants less the MCP grants that fail their
// check against the config and the pins (logged once).
func (b *broker) mcpGrants(session wire.SessionID, pins map[wire.McpServer]*policy.Pins) []policy.Grant {
	declared := func(s wire.McpServer) bool { _, ok := b.cfg.MCP.Servers[s]; return ok }
	var out []policy.Grant
	for _, g := range b.grantsIn(session) {
		if err := policy.CheckMCPGrant(g, declared, pins); err != nil {
			b.logOnce("grants: " + err.Error())
			continue
		}
		out = append(out, g)
	}
	return out
}

// pinnedLive is the pin of the call's tool, or nil when it was never pinned
// or the live list of this session's instance (started here if need be)
// lacks it or differs from it.
func (b *broker) pinnedLive(ctx context.Context, session wire.SessionID, full string, pins map[wire.McpServer]*policy.Pins) *policy.PinnedTool {
	server, tool, ok := wire.SplitMcpName(full)
	if !ok || pins[server] == nil || pins[server].Tools[tool] == nil {
		return nil
	}
	pin := pins[server].Tools[tool]
	live, err := b.mcp.pool.List(ctx, session, server)
	if err != nil {
		b.log.Printf("mcp %s: %v", server, err)
		return pin // the call will fail to run; the decision stands on the pin
	}
	if !liveMatches(live, pin) {
		b.log.Printf("mcp %s: %s differs from its pin or is no longer listed: denied until the owner pins again", server, full)
		return nil
	}
	return pin
}

func liveMatches(live wire.McpToolsResult, pin *policy.PinnedTool) bool {
	for _, d := range live.Tools {
		if d.Name == pin.Name {
			return pin.Matches(d)
		}
	}
	return false
}

// decideMCP is decide for an MCP tool.
func (b *broker) decideMCP(ctx context.Context, req request, state policy.Session) (policy.Decision, error) {
	now, err := wire.TimestampOf(b.clock())
	if err != nil {
		return policy.Decision{}, err
	}
	pins := b.pins()
	pin := b.pinnedLive(ctx, req.session, req.call.Name(), pins)
	r := policy.SessionRequest(state, req.call, now)
	return policy.DecideMCP(b.mcpGrants(req.session, pins), r, pin)
}

// runMCP runs an allowed or approved MCP call, sending it only if the
// instance's live definition is still the pinned one. A remote server's
// secret is redacted from what comes back (egressd takes it out first).
func (b *broker) runMCP(ctx context.Context, req request, d policy.Decision) (outcome, error) {
	if _, err := d.Runnable(); err != nil {
		return outcome{}, err
	}
	o, err := b.runMCPCall(ctx, req, d)
	o.secrets = append(o.secrets, b.mcpSecrets(d.Input().Args().(wire.McpArgs).Server)...)
	return o, err
}

func (b *broker) runMCPCall(ctx context.Context, req request, d policy.Decision) (outcome, error) {
	args := d.Input().Args().(wire.McpArgs)
	name := d.Input().Name()
	pins := b.pins()
	p := pins[args.Server]
	allowed := func(live wire.McpToolsResult) error {
		if p == nil || p.Tools[args.Tool] == nil || !liveMatches(live, p.Tools[args.Tool]) {
			return errUnpinnedNow
		}
		return nil
	}
	m, err := b.mcp.pool.Call(ctx, req.session, args.Server, args.Tool, args.Canonical, allowed)
	switch r := m.(type) {
	case nil:
		if errors.Is(err, errUnpinnedNow) {
			return failedOutcome("%s: not run: its live definition changed after the decision; the owner must pin it again", name), nil
		}
		b.log.Printf("%s: %v", name, err)
		return outcome{output: toolrun.Output{OK: false, Content: name + ": the MCP server failed: " + cut(err.Error(), 512)}, ran: true}, nil
	case wire.McpToolResult:
		return outcome{output: toolrun.Output{OK: !r.IsError, Content: string(r.Text)}, ran: true}, nil
	case wire.McpToolError:
		return outcome{output: toolrun.Output{OK: false, Content: name + ": " + string(r.Message)}, ran: true}, nil
	default:
		return failedOutcome("%s: the MCP instance answered %s", name, wire.KindOf(m)), nil
	}
}

var errUnpinnedNow = errors.New("the live definition differs from the pin")

// canonicalMCPArguments re-encodes an MCP call's arguments canonically
// (RFC 8785), so that what is decided, audited, shown and sent is one text;
// arguments that do not parse (a duplicate key, invalid UTF-8) stay as
// they are and match no grant.
func canonicalMCPArguments(arguments string) string {
	v := jsontext.Value(arguments)
	if err := v.Canonicalize(); err != nil {
		return arguments
	}
	return string(v)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// mcpToolSpecs are the pinned tools a usable grant covers, with the pinned
// description and schema (capped), never the live ones; a tool brokerd
// last saw changed is left out.
func (b *broker) mcpToolSpecs(session wire.SessionID, state policy.Session, now wire.Timestamp, note string) []wire.ToolSpec {
	pins := b.pins()
	grants := b.mcpGrants(session, pins)
	var specs []wire.ToolSpec
	for _, server := range b.cfg.MCP.Names() {
		p := pins[server]
		if p == nil {
			continue
		}
		seen, haveSeen := b.mcp.pool.Seen(server)
		for _, lt := range p.Lock.Tools {
			t := p.Tools[lt.Name]
			if t.Unusable != "" || len(t.InputSchema) > mcpMaxSchema || (haveSeen && !liveMatches(seen, t)) {
				continue
			}
			if !policy.MCPUsable(grants, server, t.Name, state, now) {
				continue
			}
			desc := strings.ToValidUTF8(cut(t.Description, mcpMaxDescription), "")
			specs = append(specs, wire.ToolSpec{Name: wire.McpFullName(server, t.Name), Description: desc + note, Parameters: t.InputSchema})
		}
	}
	return specs
}

// mcpAdmin serves the owner's MCP kinds.
func (b *broker) mcpAdmin(ctx context.Context, m wire.Message, reply replyFunc) error {
	switch m := m.(type) {
	case wire.McpPin:
		return reply(true, b.mcpPin(ctx, m.Server))
	case wire.McpList:
		res := wire.McpListResult{Servers: []wire.McpServerState{}}
		for _, s := range b.cfg.MCP.Names() {
			st := wire.McpServerState{Server: s}
			if live, ok := b.mcp.pool.Seen(s); ok {
				st.Live = &live
			}
			res.Servers = append(res.Servers, st)
		}
		return reply(true, res)
	case wire.McpCall:
		session, err := ownSession("mcp-call")
		if err != nil {
			return err
		}
		defer b.mcp.pool.CloseSession(session)
		req := wire.ToolRequest{Session: session, Call: 1, Tool: wire.McpFullName(m.Server, m.Tool), Arguments: m.Arguments}
		return b.toolRequest(ctx, req, reply)
	}
	return fmt.Errorf("not an MCP admin kind: %s", wire.KindOf(m))
}

// mcpPin starts the server exactly as for a call, in a session of its own,
// and lists its tools for the owner to pin.
func (b *broker) mcpPin(ctx context.Context, server wire.McpServer) wire.McpPinResult {
	res := wire.McpPinResult{Server: server}
	session, err := ownSession("mcp-pin")
	if err == nil {
		defer b.mcp.pool.CloseSession(session)
		var live wire.McpToolsResult
		if live, err = b.mcp.pool.List(ctx, session, server); err == nil {
			res.Live = &live
			return res
		}
	}
	msg := wire.McpText(cut(err.Error(), 4096))
	res.Error = &msg
	return res
}

// ownSession mints a session for one owner's MCP request: nothing of it
// reaches the model's sessions.
func ownSession(prefix string) (wire.SessionID, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return wire.SessionID{}, err
	}
	return wire.ParseSessionID(prefix + "-" + hex.EncodeToString(b[:]))
}

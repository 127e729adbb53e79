package mcppool

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// A remote server's instance starts with the channel brokerd opens; when
// egressd refuses it, the call fails with that reason, no instance stays,
// and the next call asks again.
func TestRemoteInstanceAsksForItsChannelEachStart(t *testing.T) {
	srv := config.MCPServer{URL: "https://mcp.example.com/mcp", MemoryMB: 512, Processes: 64}
	p, _ := testPool(t, map[wire.McpServer]config.MCPServer{"remote": srv}, time.Minute, 4)
	var asked atomic.Int32
	p.cfg.Channel = func(_ context.Context, name wire.McpServer, got config.MCPServer) (*os.File, error) {
		asked.Add(1)
		if name != "remote" || got.URL != srv.URL {
			t.Errorf("asked for %s %+v", name, got)
		}
		return nil, errors.New("egressd refused: the test says no")
	}
	for range 2 {
		_, err := p.List(context.Background(), sid(t, "chat-1"), "remote")
		if err == nil || !strings.Contains(err.Error(), "MCP server remote: egressd refused: the test says no") {
			t.Errorf("List: %v", err)
		}
	}
	if asked.Load() != 2 || p.Count() != 0 {
		t.Errorf("asked %d times, %d instances", asked.Load(), p.Count())
	}
	p.cfg.Channel = nil
	if _, err := p.List(context.Background(), sid(t, "chat-1"), "remote"); err == nil || !strings.Contains(err.Error(), "no egress for remote servers") {
		t.Errorf("without Channel: %v", err)
	}
}

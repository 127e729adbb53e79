package mcppool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// channelTime bounds asking egressd for a remote instance's channel.
const channelTime = 10 * time.Second

// startRemote runs a remote server's sandbox: `boxmaker toolkit mcp` with
// the server's url and, as its only way out, the channel to egressd that
// Config.Channel opened; no mounts, no server child, no network.
func (p *Pool) startRemote(name wire.McpServer, srv config.MCPServer) (*sandbox.Instance, error) {
	if p.cfg.Channel == nil {
		return nil, errors.New("MCP server " + string(name) + ": brokerd has no egress for remote servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), channelTime)
	defer cancel()
	ch, err := p.cfg.Channel(ctx, name, srv)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", name, err)
	}
	lim := p.cfg.Limits
	lim.MemoryBytes, lim.Processes = int64(srv.MemoryMB)<<20, int64(srv.Processes)
	job := toolrun.MCPJob{Server: name, Command: []string{}, URL: srv.URL, Env: []string{},
		Mounts: []toolrun.Mount{}, System: p.cfg.System, Limits: lim}
	return sandbox.StartMCP(sandbox.MCPSpec{Bwrap: p.cfg.Bwrap, Executable: p.cfg.Executable, RunAs: p.cfg.RunAs,
		TmpBytes: 16 << 20, Job: job, Channel: ch})
}

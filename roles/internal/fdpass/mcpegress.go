package fdpass

import (
	"context"
	"os"

	"boxmaker/wire"
)

// OpenMCPEgress asks egressd for a remote MCP server's channel (DESIGN.md
// section 16): it makes a socketpair, sends one end to egressd with the
// server's url and the Authorization value egressd is to add (nil for
// none), waits for egress_ready and returns the other end, which becomes
// the instance's channel (toolrun.MCPChannelFD). The secret travels only on
// egress.sock; the returned end never sees it.
func OpenMCPEgress(ctx context.Context, socketPath string, url wire.McpURL, authorization *string) (*os.File, error) {
	sandboxEnd, egressEnd, err := socketpair()
	if err != nil {
		return nil, err
	}
	defer egressEnd.Close()
	if err := askEgressd(ctx, socketPath, wire.EgressMcpOpen{URL: url, Authorization: authorization}, egressEnd); err != nil {
		sandboxEnd.Close()
		return nil, err
	}
	return sandboxEnd, nil
}

package brokerd

import (
	"context"
	"os"

	"boxmaker/roles/brokerd/internal/secrets"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/wire"
)

// Remote MCP servers (DESIGN.md section 16): brokerd asks egressd for the
// instance's channel with the server's url and its secret as the
// Authorization value, so that the secret stays in brokerd and egressd.

// mcpChannel is mcppool's Config.Channel.
func (b *broker) mcpChannel(ctx context.Context, name wire.McpServer, srv config.MCPServer) (*os.File, error) {
	auth, err := b.mcpAuthorization(srv)
	if err != nil {
		return nil, err
	}
	return fdpass.OpenMCPEgress(ctx, b.runner.egressSock, wire.McpURL(srv.URL), auth)
}

// mcpAuthorization is "Bearer " and the server's secret, or nil when it
// names none. The error names the secret, never its value.
func (b *broker) mcpAuthorization(srv config.MCPServer) (*string, error) {
	if srv.Secret == "" {
		return nil, nil
	}
	value, err := secrets.Read(b.paths, srv.Secret)
	if err != nil {
		return nil, &secretError{name: srv.Secret, err: err}
	}
	v := "Bearer " + value
	return &v, nil
}

type secretError struct {
	name string
	err  error
}

func (e *secretError) Error() string { return "secret " + e.name + ": " + e.err.Error() }

// mcpSecrets are the values brokerd redacts from a server's results beside
// egressd: the server's secret, when it has one that brokerd can read.
func (b *broker) mcpSecrets(server wire.McpServer) []string {
	srv, ok := b.cfg.MCP.Servers[server]
	if !ok || srv.Secret == "" {
		return nil
	}
	value, err := secrets.Read(b.paths, srv.Secret)
	if err != nil {
		return nil
	}
	return []string{value}
}

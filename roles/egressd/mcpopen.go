package egressd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"

	"boxmaker/policy"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"golang.org/x/net/http/httpguts"
)

// A remote MCP server's channel (DESIGN.md section 16). brokerd sends
// egress_mcp_open with one end of a socketpair whose other end is the
// instance's fd 4. For the instance's life the sandbox sends on it, one
// byte at a time, one end of a fresh socketpair per HTTP connection
// (SCM_RIGHTS); egressd serves one request after another on each, to the
// one origin and path of the server's url, and ends them all when the
// channel ends.

// mcpGrant is what one channel allows.
type mcpGrant struct {
	hosts  policy.HostSet   // one entry: the url's origin
	target policy.URLTarget // the url's, as the hosts check read it
	path   string           // the url's escaped path, the only one asked for
	secret secret
}

// openMCP checks an egress_mcp_open frame and its descriptor, answers
// egress_ready and serves the channel, which takes one of the MCP channel
// slots (not http_fetch's) for its life. The descriptor is always consumed.
func (s *server) openMCP(ctx context.Context, open wire.EgressMcpOpen, f *os.File, reply sock.Replier) error {
	grant, err := mcpGrantOf(open)
	if err != nil {
		f.Close()
		return err
	}
	conn, err := sandboxConn(f)
	if err != nil {
		return err
	}
	select {
	case s.mcpSlots <- struct{}{}:
	default:
		conn.Close()
		return sock.Refusal{Code: wire.Internal, Detail: fmt.Sprintf("all %d remote MCP channels are open ([mcp] max_instances)", cap(s.mcpSlots))}
	}
	if err := reply(wire.Envelope{Final: true, Msg: wire.EgressReady{}}); err != nil {
		<-s.mcpSlots
		conn.Close()
		return err
	}
	s.calls.Go(func() {
		defer func() { <-s.mcpSlots }()
		s.serveChannel(ctx, conn.(*net.UnixConn), grant)
	})
	return nil
}

// mcpGrantOf checks the url as config.toml did (https, or http to an IP
// literal only) and turns its origin into the one hosts entry the channel
// may reach: a special-purpose address passes only because the owner wrote
// that literal, exactly as a grant's hosts entry would allow it.
func mcpGrantOf(open wire.EgressMcpOpen) (mcpGrant, error) {
	raw := string(open.URL)
	if err := config.CheckMCPURL(raw); err != nil {
		return mcpGrant{}, badMessage("url: %v", err)
	}
	if open.Authorization != nil && (*open.Authorization == "" || !httpguts.ValidHeaderFieldValue(*open.Authorization)) {
		return mcpGrant{}, badMessage("the authorization value is empty or not a valid header value")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return mcpGrant{}, badMessage("url: %v", err)
	}
	entry := u.Host
	if u.Scheme == "http" {
		entry = "http://" + u.Host
	}
	hosts, err := policy.ParseHostSet([]string{entry})
	if err != nil {
		return mcpGrant{}, badMessage("url: %v", err)
	}
	target, ok, why := hosts.AllowsURL(raw)
	if !ok {
		return mcpGrant{}, badMessage("url: %s", why)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/" // what an HTTP client asks for when the url has no path
	}
	return mcpGrant{hosts: hosts, target: target, path: path, secret: newSecret(open.Authorization)}, nil
}

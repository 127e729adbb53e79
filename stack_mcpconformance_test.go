package main

import (
	"fmt"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

// confGrant lets every pinned tool of the conformance server run without
// an approval.
const confGrant = "tool = \"mcp__conf__*\"\nmode = \"auto\"\nmax_taint = \"private\"\n"

// TestStackMCPConformance runs the official suite's client scenarios
// against boxmaker's real path for a remote server (issue 28): for each, a
// home whose config declares [mcp.conf] with the suite's URL, `boxmaker up`
// as root, `boxmaker mcp pin conf --yes`, and `boxmaker mcp call` of the
// scenario's tool, so that every request goes from toolkit mcp in its
// sandbox through egressd to the suite's server. Every check must be
// SUCCESS, as for the Go SDK's own client in
// TestMCPConformanceHarnessGoSDK.
func TestStackMCPConformance(t *testing.T) {
	require.Root(t, "MCP sandboxes run under the role users")
	conformanceSuite(t)
	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			checks, printed := runConformance(t, sc.name, boxmakerClient(sc))
			judgeChecks(t, checks, sc.want)
			if !strings.Contains(printed, sc.reply) {
				t.Errorf("mcp call printed no %q:\n%s", sc.reply, printed)
			}
		})
	}
}

// boxmakerClient is the owner's path: config, pin, and mcp call.
func boxmakerClient(sc conformanceScenario) conformanceClient {
	return func(t *testing.T, url string) (string, error) {
		literal, err := loopbackLiteral(url)
		if err != nil {
			return "", err
		}
		s := startStack(t, map[string]string{"conf": confGrant}, withMCP(t, "[mcp.conf]\nurl = "+tomlBasic(literal)+"\n"))
		out, err := s.try("mcp", "pin", "conf", "--yes")
		if err != nil {
			return out, fmt.Errorf("mcp pin conf --yes: %v\nup's log:\n%s", err, s.log)
		}
		if sc.tool != "" {
			call, err := s.try("mcp", "call", "conf", sc.tool, sc.args)
			out += call
			if err != nil {
				return out, fmt.Errorf("mcp call conf %s: %v\nup's log:\n%s", sc.tool, err, s.log)
			}
		}
		return out, throughEgressd(s.log.String(), literal)
	}
}

// throughEgressd finds egressd's record of an exchange with the server in
// up's log: toolkit's sandbox has no network, and this says the requests
// took the one way out it has.
func throughEgressd(log, url string) error {
	host := strings.TrimPrefix(url, "http://")
	host, _, _ = strings.Cut(host, "/")
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "egressd: ") && strings.Contains(line, "//"+host) {
			return nil
		}
	}
	return fmt.Errorf("up's log has no egressd record of %s:\n%s", host, log)
}

// loopbackLiteral writes the suite's http://localhost:PORT[/PATH] URL
// with 127.0.0.1: egressd refuses a name that resolves to a special-purpose
// address, and allows one only as the IP literal the owner wrote. A URL
// without a path (initialize and sse-retry give one) gets "/", the path an
// empty one means for http (RFC 9110 section 4.2.3), which config requires
// be written.
func loopbackLiteral(url string) (string, error) {
	rest, ok := strings.CutPrefix(url, "http://localhost:")
	if !ok {
		return "", fmt.Errorf("the suite's server is not at http://localhost:PORT: %q", url)
	}
	if !strings.Contains(rest, "/") {
		rest += "/"
	}
	return "http://127.0.0.1:" + rest, nil
}

package bxctl

import (
	"fmt"
	"path/filepath"
	"strings"

	"boxmaker/policy"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// MCP grants in `grants check` and `grants explain` (DESIGN.md section 16):
// checked against config.toml's [mcp.NAME] and the pins in etc/mcp/ beside
// the grants directory, as brokerd checks them.

// mcpChecks are the MCP grants brokerd would leave out, with why.
func mcpChecks(cmd *cli.Command, grantsDir string, grants []policy.Grant) []error {
	declared, pins, err := mcpContext(cmd, grantsDir)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, g := range grants {
		if err := policy.CheckMCPGrant(g, declared, pins); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func mcpContext(cmd *cli.Command, grantsDir string) (func(wire.McpServer) bool, map[wire.McpServer]*policy.Pins, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return nil, nil, err
	}
	declared := func(s wire.McpServer) bool { _, ok := cfg.MCP.Servers[s]; return ok }
	pins, bad := policy.LoadLocks(filepath.Join(filepath.Dir(grantsDir), "mcp"), cfg.MCP.Names())
	for _, e := range bad {
		fmt.Fprintf(cmd.Root().ErrWriter, "lock ignored, as brokerd would: %v\n", e)
	}
	return declared, pins, nil
}

// decideForExplain decides req as brokerd would, an MCP tool on its pin
// (brokerd also compares the live list, which only it sees).
func decideForExplain(cmd *cli.Command, grantsDir string, grants []policy.Grant, req policy.Request) (policy.Decision, error) {
	if !strings.HasPrefix(req.Tool, wire.McpToolPrefix) {
		return policy.Decide(grants, req)
	}
	declared, pins, err := mcpContext(cmd, grantsDir)
	if err != nil {
		return policy.Decision{}, err
	}
	var pin *policy.PinnedTool
	if server, tool, ok := wire.SplitMcpName(req.Tool); ok && pins[server] != nil {
		pin = pins[server].Tools[tool]
	}
	var usable []policy.Grant
	for _, g := range grants {
		if policy.CheckMCPGrant(g, declared, pins) == nil {
			usable = append(usable, g)
		}
	}
	return policy.DecideMCP(usable, req, pin)
}

// grantConstraintText is a grant's constraints for the table: an MCP
// grant's by pointer.
func grantConstraintText(g policy.Grant) string {
	if g.IsMCP() {
		if t := strings.TrimSpace(g.ArgumentsText()); t != "" {
			return t
		}
		return "-"
	}
	return constraintText(g.Constraints())
}

package policy

import (
	"os"
	"strings"
	"testing"

	"boxmaker/wire"

	"github.com/pelletier/go-toml/v2"
)

type mcpTable struct {
	Now  string `toml:"now"`
	Case []struct {
		Name      string `toml:"name"`
		Tool      string `toml:"tool"`
		Arguments string `toml:"arguments"`
		Taint     string `toml:"taint"`
		Untrusted bool   `toml:"untrusted"`
		Pinned    *bool  `toml:"pinned"`
		Expect    string `toml:"expect"`
		Grant     string `toml:"grant"`
		Reason    string `toml:"reason"`
	} `toml:"case"`
}

func loadMCPFixtures(t *testing.T) ([]Grant, map[wire.McpServer]*Pins) {
	t.Helper()
	grants, bad, err := LoadDir("../fixtures/policy/mcp-grants")
	if err != nil || len(bad) > 0 || len(grants) == 0 {
		t.Fatalf("mcp-grants: %v %v", err, bad)
	}
	pins, badLocks := LoadLocks("../fixtures/policy/mcp-locks", []wire.McpServer{"files", "search", "memory"})
	if len(badLocks) > 0 || len(pins) != 2 {
		t.Fatalf("mcp-locks: %v", badLocks)
	}
	return grants, pins
}

// TestMCPFixtures holds every row of fixtures/policy/mcp_cases.toml.
func TestMCPFixtures(t *testing.T) {
	grants, pins := loadMCPFixtures(t)
	data, err := os.ReadFile("../fixtures/policy/mcp_cases.toml")
	if err != nil {
		t.Fatal(err)
	}
	var table mcpTable
	if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&table); err != nil {
		t.Fatal(err)
	}
	now, err := wire.ParseTimestamp(table.Now)
	if err != nil || len(table.Case) == 0 {
		t.Fatalf("table: %v", err)
	}
	for _, c := range table.Case {
		t.Run(c.Name, func(t *testing.T) {
			taint := wire.Private
			if c.Taint != "" {
				taint, _ = wire.ParseDataClass(c.Taint)
			}
			var pin *PinnedTool
			if server, tool, ok := wire.SplitMcpName(c.Tool); ok && pins[server] != nil {
				pin = pins[server].Tools[tool]
			}
			if c.Pinned != nil && !*c.Pinned {
				pin = nil
			}
			d, err := DecideMCP(grants, Request{Tool: c.Tool, Arguments: c.Arguments, Taint: taint, Untrusted: c.Untrusted, Now: now}, pin)
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, c.Expect, c.Grant, c.Reason)
			if d.Outcome() != Denied && d.Input().Args().Subject() != c.Tool {
				t.Errorf("the subject %q does not begin with the tool's full name", d.Input().Args().Subject())
			}
		})
	}
}

// MCP grants are checked at load: against the config (a server it does not
// declare) and the pinned schema (a pointer it does not declare).
func TestMCPGrantChecks(t *testing.T) {
	grants, pins := loadMCPFixtures(t)
	declared := func(s wire.McpServer) bool { return s == "files" || s == "search" }
	for _, g := range grants {
		if err := CheckMCPGrant(g, declared, pins); err != nil {
			t.Errorf("fixture grant %s: %v", g.ID(), err)
		}
	}
	bad := map[string]string{
		"undeclared server": "tool = \"mcp__nope__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n",
		"undeclared pointer": "tool = \"mcp__files__read_text_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n" +
			"[constraints.arguments.\"/file\"]\npaths = [\"/srv\"]\n",
		"undeclared pointer on a wildcard": "tool = \"mcp__files__*\"\nmode = \"auto\"\nmax_taint = \"private\"\n" +
			"[constraints.arguments.\"/content\"]\npatterns = [\"x\"]\n",
	}
	for name, text := range bad {
		g, err := ParseGrant(name[:3]+".toml", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if CheckMCPGrant(g, declared, pins) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	unpinned, err := ParseGrant("mem.toml", []byte("tool = \"mcp__memory__*\"\nmode = \"auto\"\nmax_taint = \"private\"\n"))
	if err != nil || CheckMCPGrant(unpinned, func(wire.McpServer) bool { return true }, pins) != nil {
		t.Errorf("a grant for a declared, unpinned server is valid: %v", err)
	}
}

func TestMCPGrantParseErrors(t *testing.T) {
	for text, want := range map[string]string{
		"tool = \"mcp__files\"\nmode = \"auto\"\nmax_taint = \"private\"\n":                                                                                  "mcp__NAME__TOOL",
		"tool = \"mcp__Files__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n":                                                                               "[a-z0-9-]",
		"tool = \"mcp__files__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npaths = [\"/srv\"]\n":                                            "by JSON pointer",
		"tool = \"mcp__files__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints.arguments.path]\npaths = [\"/srv\"]\n":                             "must start with /",
		"tool = \"mcp__files__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints.arguments.\"/p\"]\npaths = []\n":                                   "matches nothing",
		"tool = \"mcp__files__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints.arguments.\"/p\"]\npaths = [\"/a\"]\nhosts = [\"b\"]\n":            "exactly one",
		"tool = \"mcp__files__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints.arguments.\"/p\"]\npaths = [\"rel\"]\n":                            "paths are absolute",
		"tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"ls\"]\n[constraints.arguments.\"/p\"]\npaths = [\"/a\"]\n": "only MCP tools",
	} {
		_, err := ParseGrant("g.toml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

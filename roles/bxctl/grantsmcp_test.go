package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcpHome is a home whose config declares files and search, with the
// fixture pins and MCP grants.
func mcpHome(t *testing.T, extraGrant string) string {
	t.Helper()
	home := t.TempDir()
	etc := filepath.Join(home, "etc")
	for _, d := range []string{"grants", "mcp"} {
		os.MkdirAll(filepath.Join(etc, d), 0o755)
	}
	os.WriteFile(filepath.Join(etc, "config.toml"), []byte("[mcp.files]\ncommand = [\"/usr/bin/true\"]\n[mcp.search]\ncommand = [\"/usr/bin/true\"]\n"), 0o644)
	copyDir(t, fixtures+"/policy/mcp-grants", filepath.Join(etc, "grants"))
	copyDir(t, fixtures+"/policy/mcp-locks", filepath.Join(etc, "mcp"))
	if extraGrant != "" {
		os.WriteFile(filepath.Join(etc, "grants", "extra.toml"), []byte(extraGrant), 0o644)
	}
	return home
}

func copyDir(t *testing.T, from, to string) {
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(from, e.Name()))
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
}

func TestGrantsCheckMCP(t *testing.T) {
	home := mcpHome(t, "")
	code, out, errOut := run(t, "grants", "check", "--home", home)
	if code != 0 || !strings.Contains(out, "mcp__files__read_text_file") || !strings.Contains(out, "/path:paths") {
		t.Fatalf("valid MCP grants: status %d\n%s%s", code, out, errOut)
	}
	for grant, want := range map[string]string{
		"tool = \"mcp__nope__x\"\nmode = \"auto\"\nmax_taint = \"private\"\n":                                                                      "declares no MCP server nope",
		"tool = \"mcp__files__read_text_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints.arguments.\"/file\"]\npaths = [\"/srv\"]\n": "argument /file is not in the pinned input schema",
	} {
		code, out, errOut := run(t, "grants", "check", "--home", mcpHome(t, grant))
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("status %d, want 1 and %q:\n%s%s", code, want, out, errOut)
		}
	}
}

func TestGrantsExplainMCP(t *testing.T) {
	home := mcpHome(t, "")
	code, out, errOut := run(t, "grants", "explain", "--home", home, "mcp__files__read_text_file", `{"path":"/srv/share/public/a"}`)
	if code != 0 || !strings.Contains(out, "files-read: chosen: auto") {
		t.Errorf("explain an MCP call: status %d\n%s%s", code, out, errOut)
	}
	_, out, errOut = run(t, "grants", "explain", "--home", home, "mcp__files__delete", `{}`)
	if !strings.Contains(out+errOut, "unpinned_tool") {
		t.Errorf("explain an unpinned tool:\n%s%s", out, errOut)
	}
}

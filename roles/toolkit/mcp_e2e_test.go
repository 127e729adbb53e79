//go:build linux && amd64

package toolkit

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// MCP instances end to end (DESIGN.md section 16): the real toolkit mcp in
// a real bubblewrap sandbox, with the reference servers and
// fixtures/mcphostile as its child.

// mcpRun is one instance driven as brokerd drives it.
type mcpRun struct {
	t    *testing.T
	inst *sandbox.Instance
	id   uint64
}

func mcpLimits() toolrun.MCPLimits {
	return toolrun.MCPLimits{MemoryBytes: 2 << 30, Processes: 4096, FileBytes: 16 << 20,
		CallMillis: 10_000, StartMillis: 30_000, ResultBytes: 64 << 10, MaxLineBytes: 16 << 20}
}

func startMCP(t *testing.T, command, env []string, mounts []sandbox.Mount) *mcpRun {
	t.Helper()
	require.Root(t, "MCP sandboxes mount host paths by descriptor")
	job := toolrun.MCPJob{Server: "test", Command: command,
		Env:    append([]string{"PATH=/usr/bin:/bin", "HOME=" + toolrun.MCPHome, "TMPDIR=" + toolrun.MCPTmp}, env...),
		Mounts: sandbox.JobMounts(mounts), System: toolrun.System{ShellPath: "/usr/bin:/bin"}, Limits: mcpLimits()}
	inst, err := sandbox.StartMCP(sandbox.MCPSpec{Bwrap: requireSandbox(t), Executable: toolkitBinary(t),
		Mounts: mounts, TmpBytes: 64 << 20, Job: job})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(5 * time.Second) })
	return &mcpRun{t: t, inst: inst}
}

func (r *mcpRun) ask(m wire.Message) wire.Message {
	r.t.Helper()
	r.id++
	if err := wire.WriteEnvelope(r.inst.Stdin, wire.Envelope{ID: r.id, Final: true, Msg: m}); err != nil {
		r.t.Fatalf("write: %v (diagnostics: %s)", err, r.inst.Diagnostics())
	}
	for {
		env, err := wire.ReadEnvelope(r.inst.Stdout)
		if err != nil {
			r.t.Fatalf("read: %v (diagnostics: %s)", err, r.inst.Diagnostics())
		}
		if env.Final {
			return env.Msg
		}
	}
}

func (r *mcpRun) call(tool string, args map[string]any) string {
	r.t.Helper()
	b, _ := json.Marshal(args)
	switch m := r.ask(wire.McpToolCall{Tool: wire.McpToolName(tool), Arguments: wire.McpText(b)}).(type) {
	case wire.McpToolResult:
		return string(m.Text)
	case wire.McpToolError:
		return "error: " + string(m.Message)
	default:
		r.t.Fatalf("%s: got %#v", tool, m)
		return ""
	}
}

// mcpTools is what scripts/mcp-deps.sh installed, read-only in the sandbox: Node.js 22 and the
// reference servers.
func mcpTools(t *testing.T) (require.MCPServers, sandbox.Mount) {
	s := require.MCP(t, "../..")
	return s, sandbox.Mount{Host: s.Dir, Path: s.Dir}
}

func TestMCPReferenceServersInTheSandbox(t *testing.T) {
	servers, tools := mcpTools(t)
	share := hostDir(t)
	os.WriteFile(filepath.Join(share, "a.txt"), []byte("shared text"), 0o644)
	r := startMCP(t, []string{servers.Node, servers.Filesystem, share}, nil,
		[]sandbox.Mount{tools, {Host: share, Path: share}})
	if list, ok := r.ask(wire.McpTools{}).(wire.McpToolsResult); !ok || len(list.Tools) < 5 {
		t.Fatalf("server-filesystem's tools: %#v", list)
	}
	if got := r.call("read_text_file", map[string]any{"path": filepath.Join(share, "a.txt")}); !strings.HasPrefix(got, "shared text\n") {
		t.Errorf("read_text_file in the sandbox: %q", got)
	}

	e := startMCP(t, []string{servers.Node, servers.Everything, "stdio"}, nil, []sandbox.Mount{tools})
	if got := e.call("echo", map[string]any{"message": "hi"}); !strings.Contains(got, "hi") {
		t.Errorf("server-everything's echo in the sandbox: %q", got)
	}
}

// hostileInSandbox builds fixtures/mcphostile into a host directory outside
// /tmp and returns its path and that directory as a read-only mount.
func hostileInSandbox(t *testing.T) (string, sandbox.Mount) {
	t.Helper()
	dir := hostDir(t)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "mcphostile")
	cmd := exec.Command("go", "build", "-o", bin, "boxmaker/fixtures/mcphostile")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build mcphostile: %v\n%s", err, out)
	}
	return bin, sandbox.Mount{Host: dir, Path: dir}
}

// The hostile server's attempts outside its mounts fail in the sandbox,
// while the same server writes inside rw, and the host file it tries is
// there to be read (the control at the end).
func TestMCPHostileServerIsContained(t *testing.T) {
	bin, binDir := hostileInSandbox(t)
	rw := hostDir(t)
	outside := hostDir(t)
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("host secret"), 0o644)
	r := startMCP(t, []string{bin}, nil, []sandbox.Mount{binDir, {Host: rw, Path: rw, Writable: true}})

	cases := []struct {
		tool, arg, key, inside string
	}{
		{"read", secret, "path", "no such file"},
		{"write", filepath.Join(outside, "planted"), "path", "write error open"},
		{"write", filepath.Join(binDir.Path, "planted"), "path", "read-only file system"},
		{"dial", "1.1.1.1:53", "addr", "dial error dial tcp 1.1.1.1:53"},
	}
	for _, c := range cases {
		got := r.call(c.tool, map[string]any{c.key: c.arg})
		if !strings.Contains(got, c.inside) || strings.Contains(got, "<nil>") {
			t.Errorf("%s %s in the sandbox: %q, want %q", c.tool, c.arg, got, c.inside)
		}
	}
	if got := r.call("write", map[string]any{"path": filepath.Join(rw, "ok")}); got != "write error <nil>" {
		t.Errorf("a write inside rw failed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Errorf("the server wrote outside its mounts")
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "host secret" {
		t.Fatalf("control: the host file is not there to be read: %v", err)
	}
}

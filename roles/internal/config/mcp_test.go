package config

import (
	"strings"
	"testing"
	"time"
)

func TestMCPServerValues(t *testing.T) {
	cfg, err := Load(writeConfig(t, `
[mcp]
idle = "90s"
max_instances = 3

[mcp.files]
command = ["/usr/bin/node", "/opt/mcp/files/dist/index.js", "/srv/share"]
ro = ["/srv/share"]
rw = ["/srv/out"]
env = { LANG = "C.UTF-8", HOME = "/srv/out" }
memory_mb = 1024
processes = 32

[mcp.memory]
command = ["/usr/bin/node", "/opt/mcp/memory/dist/index.js"]
`))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.MCP
	if m.Idle.D() != 90*time.Second || m.MaxInstances != 3 {
		t.Errorf("[mcp] read as %+v", m)
	}
	files := m.Servers["files"]
	if files.MemoryMB != 1024 || files.Processes != 32 || files.RO[0] != "/srv/share" || files.RW[0] != "/srv/out" || len(files.Command) != 3 {
		t.Errorf("[mcp.files] read as %+v", files)
	}
	mem := m.Servers["memory"]
	if mem.MemoryMB != DefaultMCPMemoryMB || mem.Processes != DefaultMCPProcesses || mem.RO == nil || mem.Env == nil {
		t.Errorf("[mcp.memory] defaults: %+v", mem)
	}
	if got := m.Names(); len(got) != 2 || got[0] != "files" || got[1] != "memory" {
		t.Errorf("Names() = %v", got)
	}
	env := strings.Join(files.Environ("/home", "/tmp"), " ")
	if env != "HOME=/srv/out LANG=C.UTF-8 PATH=/usr/bin:/bin TMPDIR=/tmp" {
		t.Errorf("Environ: %s", env)
	}
}

func TestMCPDefaultsWithoutTable(t *testing.T) {
	cfg, err := Load(writeConfig(t, "[broker]\nmax_sandboxes = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MCP.Idle.D() != DefaultMCPIdle || cfg.MCP.MaxInstances != DefaultMCPMaxInstances || len(cfg.MCP.Servers) != 0 {
		t.Errorf("[mcp] defaults: %+v", cfg.MCP)
	}
}

// Every bad value is an error that names the table and the key.
func TestMCPBadValues(t *testing.T) {
	const cmd = `command = ["/usr/bin/node", "/x.js"]` + "\n"
	for _, c := range []struct{ text, want string }{
		{"[mcp]\nidle = \"soon\"\n", "mcp.idle must be a duration"},
		{"[mcp]\nidle = 5\n", "mcp.idle must be a duration"},
		{"[mcp]\nidle = \"10ms\"\n", "at least 1s"},
		{"[mcp]\nmax_instances = 0\n", "mcp.max_instances must be an integer from 1"},
		{"[mcp]\nmax_instances = \"2\"\n", "mcp.max_instances"},
		{"[mcp]\nidel = \"1m\"\n", "mcp.idel: unknown key"},
		{"[mcp.Files]\n" + cmd, "[mcp.Files]: MCP server name \"Files\""},
		{"[mcp." + strings.Repeat("a", 33) + "]\n" + cmd, "1 to 32 characters"},
		{"[mcp.files]\nro = [\"/srv\"]\n", "[mcp.files]: command is required"},
		{"[mcp.files]\ncommand = []\n", "command is required"},
		{"[mcp.files]\ncommand = [\"node\", \"/x.js\"]\n", "command[0] must be a clean absolute path"},
		{"[mcp.files]\ncommand = \"/usr/bin/node\"\n", "[mcp.files]"},
		{"[mcp.files]\n" + cmd + "ro = [\"srv\"]\n", "ro and rw: system path \"srv\" must be a clean absolute path"},
		{"[mcp.files]\n" + cmd + "rw = [\"/srv/../etc\"]\n", "clean absolute path"},
		{"[mcp.files]\n" + cmd + "rw = [\"/\"]\n", "clean absolute path below /"},
		{"[mcp.files]\n" + cmd + "ro = [\"/srv\"]\nrw = [\"/srv/out\"]\n", "\"/srv\" and \"/srv/out\" overlap"},
		{"[mcp.files]\n" + cmd + "ro = [\"/usr/share\"]\n", "overlaps the sandbox's own /usr"},
		{"[sandbox]\nsystem_paths = [\"/nix/store\"]\n[mcp.files]\n" + cmd + "ro = [\"/nix/store/abc\"]\n", "overlaps [sandbox] system path"},
		{"[mcp.files]\n" + cmd + "env = { \"BAD-NAME\" = \"x\" }\n", "env: \"BAD-NAME\" is not a variable name"},
		{"[mcp.files]\n" + cmd + "env = { A = 1 }\n", "[mcp.files]"},
		{"[mcp.files]\n" + cmd + "memory_mb = 10\n", "memory_mb must be from 64"},
		{"[mcp.files]\n" + cmd + "processes = 0\n", "processes must be from 1"},
		{"[mcp.files]\n" + cmd + "cwd = \"/\"\n", "[mcp.files]: unknown key cwd"},
		{"[mcp.files]\ncommand = [\"/opt/mcp/node\"]\nro = [\"/srv\"]\n", "command[0] /opt/mcp/node is not inside ro, rw"},
	} {
		_, err := Load(writeConfig(t, c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.text, err, c.want)
		}
	}
}

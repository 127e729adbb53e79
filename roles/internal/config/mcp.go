package config

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"

	"github.com/pelletier/go-toml/v2"
)

// MCP is config.toml's [mcp]: the limits every MCP server's instances share
// and, as its sub-tables [mcp.NAME], the servers (DESIGN.md section 16).
type MCP struct {
	// Idle ends an instance that has had no call for this long.
	Idle Duration `toml:"idle"`
	// MaxInstances bounds the instances running at once, over every
	// session; they do not count against [broker] max_sandboxes.
	MaxInstances int `toml:"max_instances"`
	// Servers are the [mcp.NAME] tables, by NAME.
	Servers map[wire.McpServer]MCPServer `toml:"-"`
}

// MCPServer is one [mcp.NAME]: a local server brokerd starts in a sandbox,
// as the child of `boxmaker toolkit mcp`, or a remote one (URL) that
// toolkit reaches through egressd (remote.go).
type MCPServer struct {
	// Command is the server's argv; Command[0] is an absolute path.
	Command []string `toml:"command"`
	// URL is a remote server's streamable HTTP endpoint; Secret names the
	// file in secrets/ whose value egressd sends as a bearer token.
	URL    string `toml:"url"`
	Secret string `toml:"secret"`
	// RO and RW are host paths the sandbox binds at the same place,
	// read-only and writable, beyond the shell tool's base.
	RO []string `toml:"ro"`
	RW []string `toml:"rw"`
	// Env is the whole environment the server gets, plus PATH, HOME and
	// TMPDIR unless it sets them.
	Env map[string]string `toml:"env"`
	// MemoryMB bounds the data the server may map writable; Processes
	// bounds its processes and threads.
	MemoryMB  int `toml:"memory_mb"`
	Processes int `toml:"processes"`
}

// Defaults of [mcp] and [mcp.NAME]: enough for Node.js 22, whose runtime
// starts about a dozen threads and maps a few hundred MiB.
const (
	DefaultMCPIdle         = 10 * time.Minute
	DefaultMCPMaxInstances = 8
	DefaultMCPMemoryMB     = 2048
	DefaultMCPProcesses    = 128
)

// DefaultMCP is [mcp] when config.toml has none.
func DefaultMCP() MCP {
	return MCP{Idle: Dur(DefaultMCPIdle), MaxInstances: DefaultMCPMaxInstances, Servers: map[wire.McpServer]MCPServer{}}
}

// Names lists the servers in order.
func (m MCP) Names() []wire.McpServer {
	names := make([]wire.McpServer, 0, len(m.Servers))
	for n := range m.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// parseMCP reads the [mcp] table as go-toml decoded it (a table of its
// own keys and of one table per server) over the defaults. system is
// [sandbox] system_paths, which no ro or rw path may overlap.
func parseMCP(raw map[string]any, system []string) (MCP, error) {
	m := DefaultMCP()
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := m.setKey(k, raw[k], system); err != nil {
			return m, err
		}
	}
	return m, nil
}

func (m *MCP) setKey(key string, v any, system []string) error {
	switch key {
	case "idle":
		s, ok := v.(string)
		var d Duration
		if !ok || d.UnmarshalText([]byte(s)) != nil || d.D() < time.Second {
			return errors.New(`mcp.idle must be a duration of at least 1s, such as "10m"`)
		}
		m.Idle = d
	case "max_instances":
		n, ok := v.(int64)
		if !ok || n < 1 || n > 1024 {
			return errors.New("mcp.max_instances must be an integer from 1 to 1024")
		}
		m.MaxInstances = int(n)
	default:
		table, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("mcp.%s: unknown key; [mcp] has idle and max_instances, and a table [mcp.NAME] per server", key)
		}
		s, err := parseMCPServer(key, table, system)
		if err != nil {
			return err
		}
		m.Servers[wire.McpServer(key)] = s
	}
	return nil
}

// parseMCPServer decodes one [mcp.NAME] strictly: re-encoded, it goes
// through go-toml with unknown keys rejected, as the rest of config.toml does.
func parseMCPServer(name string, table map[string]any, system []string) (MCPServer, error) {
	where := "[mcp." + name + "]"
	if err := wire.CheckMcpServer(name); err != nil {
		return MCPServer{}, fmt.Errorf("%s: %w", where, err)
	}
	text, err := toml.Marshal(table)
	if err != nil {
		return MCPServer{}, fmt.Errorf("%s: %v", where, err)
	}
	s := MCPServer{MemoryMB: DefaultMCPMemoryMB, Processes: DefaultMCPProcesses}
	dec := toml.NewDecoder(strings.NewReader(string(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		var missing *toml.StrictMissingError
		if errors.As(err, &missing) && len(missing.Errors) > 0 {
			return s, fmt.Errorf("%s: unknown key %s (keys: command, ro, rw, env, memory_mb, processes; url, secret)", where, strings.Join(missing.Errors[0].Key(), "."))
		}
		return s, fmt.Errorf("%s: %s", where, describe(err))
	}
	if s.RO == nil {
		s.RO = []string{}
	}
	if s.RW == nil {
		s.RW = []string{}
	}
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	if err := s.check(system); err != nil {
		return s, fmt.Errorf("%s: %w", where, err)
	}
	return s, nil
}

// check reports the first bad value of s, naming the key.
func (s MCPServer) check(system []string) error {
	if s.URL != "" || s.Secret != "" {
		return s.checkRemote()
	}
	if err := checkCommand(s.Command); err != nil {
		return err
	}
	if err := checkBinds(s.RO, s.RW, system); err != nil {
		return err
	}
	if err := checkEnv(s.Env); err != nil {
		return err
	}
	if !visible(s.Command[0], slices.Concat(s.RO, s.RW, system, sandboxBase)) {
		return fmt.Errorf("command[0] %s is not inside ro, rw, [sandbox] system_paths or the sandbox's base (%s): the sandbox would not see it", s.Command[0], strings.Join(sandboxBase, ", "))
	}
	return s.checkLimits()
}

func (s MCPServer) checkLimits() error {
	switch {
	case s.MemoryMB < 64 || s.MemoryMB > 1<<20:
		return fmt.Errorf("memory_mb must be from 64 to %d, not %d", 1<<20, s.MemoryMB)
	case s.Processes < 1 || s.Processes > 4096:
		return fmt.Errorf("processes must be from 1 to 4096, not %d", s.Processes)
	}
	return nil
}

func checkCommand(argv []string) error {
	if len(argv) == 0 {
		return errors.New(`command is required: the server's argv, such as ["/usr/bin/node", "/opt/mcp/server/dist/index.js"]`)
	}
	if !path.IsAbs(argv[0]) || path.Clean(argv[0]) != argv[0] {
		return fmt.Errorf("command[0] must be a clean absolute path (the sandbox has no PATH search), not %q", argv[0])
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command[%d] holds a NUL byte", i)
		}
	}
	return nil
}

// checkBinds holds ro and rw to the rules of [sandbox] system_paths (clean,
// absolute, below /, clear of the sandbox's own directories) and keeps
// every bind clear of every other, so that a writable one cannot hide under
// a read-only one or the reverse.
func checkBinds(ro, rw, system []string) error {
	all := slices.Concat(ro, rw)
	if err := (toolrun.System{Paths: all, ShellPath: "/usr/bin:/bin"}).Check(); err != nil {
		return fmt.Errorf("ro and rw: %w", err)
	}
	for i, p := range all {
		for _, q := range all[:i] {
			if within(p, q) || within(q, p) {
				return fmt.Errorf("ro and rw: %q and %q overlap", q, p)
			}
		}
		for _, q := range system {
			if within(p, q) || within(q, p) {
				return fmt.Errorf("ro and rw: %q overlaps [sandbox] system path %q", p, q)
			}
		}
	}
	return nil
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// sandboxBase is what every MCP sandbox has of the host: the shell tool's
// base (roles/internal/sandbox's systemArgs).
var sandboxBase = []string{"/usr", "/bin", "/lib", "/lib64", "/sbin"}

func visible(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(p, d) })
}

func checkEnv(env map[string]string) error {
	for k, v := range env {
		if !validEnvName(k) {
			return fmt.Errorf("env: %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("env.%s holds a NUL byte", k)
		}
	}
	return nil
}

func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
		if !letter && !(i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// Environ is the server's whole environment, sorted: Env, plus PATH, HOME
// and TMPDIR where Env does not set them (home and tmp are the instance's
// private directories).
func (s MCPServer) Environ(home, tmp string) []string {
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": tmp}
	for k, v := range s.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

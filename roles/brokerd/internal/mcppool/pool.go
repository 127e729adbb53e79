package mcppool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// Config is what the pool needs from brokerd.
type Config struct {
	Bwrap, Executable string
	RunAs             *syscall.Credential
	MCP               config.MCP
	System            toolrun.System // [sandbox] system_paths and shell_path
	Limits            toolrun.MCPLimits
	// Forbidden are brokerd's own state paths: no ro or rw may reach them.
	Forbidden []string
	Log       func(string)
	// Channel opens a remote server's channel to egressd (brokerd reads
	// its secret and asks egressd); the instance gets the returned end.
	Channel func(ctx context.Context, name wire.McpServer, srv config.MCPServer) (*os.File, error)
}

type key struct {
	session wire.SessionID
	server  wire.McpServer
}

// Pool is safe for concurrent use.
type Pool struct {
	cfg  Config
	mu   sync.Mutex
	all  map[key]*instance
	seen map[wire.McpServer]wire.McpToolsResult // the last live list of each server
	stop chan struct{}
}

// ErrUnknownServer is a server config.toml does not declare.
var ErrUnknownServer = errors.New("no such MCP server in config.toml")

// New returns a pool; Close ends it and its instances.
func New(cfg Config) *Pool {
	p := &Pool{cfg: cfg, all: map[key]*instance{}, seen: map[wire.McpServer]wire.McpToolsResult{}, stop: make(chan struct{})}
	go p.reap()
	return p
}

// Allowed decides, from the instance's live list, whether the call may go
// to the server; Call sends nothing when it returns an error.
type Allowed func(live wire.McpToolsResult) error

// Call makes one call in session's instance of server, starting it if
// needed and listing its tools again after a list change, and sends the
// call only if allowed accepts the live list.
func (p *Pool) Call(ctx context.Context, session wire.SessionID, server wire.McpServer, tool wire.McpToolName, arguments string, allowed Allowed) (wire.Message, error) {
	in, err := p.instance(ctx, session, server)
	if err != nil {
		return nil, err
	}
	defer p.release(in)
	if in.stale.Load() {
		if err := p.list(ctx, in); err != nil {
			return nil, err
		}
	}
	if err := allowed(in.live); err != nil {
		return nil, err
	}
	m, err := in.ask(ctx, wire.McpToolCall{Tool: tool, Arguments: wire.McpText(arguments)}, p.callLimit(), p.cfg.Log)
	if e, ok := m.(wire.McpToolError); ok && e.Ended {
		in.end() // toolkit gave up on its server: the next call starts another
	}
	return m, err
}

// List starts session's instance of server if needed and lists its tools
// (for `mcp pin`, in a session of the pin's own).
func (p *Pool) List(ctx context.Context, session wire.SessionID, server wire.McpServer) (wire.McpToolsResult, error) {
	in, err := p.instance(ctx, session, server)
	if err != nil {
		return wire.McpToolsResult{}, err
	}
	defer p.release(in)
	if in.stale.Load() {
		if err := p.list(ctx, in); err != nil {
			return wire.McpToolsResult{}, err
		}
	}
	return in.live, nil
}

// Seen is the live list brokerd last saw of server, if any.
func (p *Pool) Seen(server wire.McpServer) (wire.McpToolsResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.seen[server]
	return r, ok
}

// callLimit is how long brokerd waits for one answer: toolkit's own call
// limit, plus room for its error frame.
func (p *Pool) callLimit() time.Duration { return p.cfg.Limits.CallTime() + 5*time.Second }

func (p *Pool) list(ctx context.Context, in *instance) error {
	limit := p.cfg.Limits.StartTime() + p.callLimit()
	m, err := in.ask(ctx, wire.McpTools{}, limit, p.cfg.Log)
	if err != nil {
		return err
	}
	switch m := m.(type) {
	case wire.McpToolsResult:
		in.live = m
		in.stale.Store(false)
		p.mu.Lock()
		p.seen[in.key.server] = m
		p.mu.Unlock()
		return nil
	case wire.McpToolError:
		in.end()
		return fmt.Errorf("the MCP server could not list its tools: %s", m.Message)
	default:
		in.end()
		return fmt.Errorf("the MCP instance answered tools with %s", wire.KindOf(m))
	}
}

// instance returns session's live instance of server, locked and marked
// busy, starting one (and listing its tools) when there is none.
func (p *Pool) instance(ctx context.Context, session wire.SessionID, server wire.McpServer) (*instance, error) {
	srv, ok := p.cfg.MCP.Servers[server]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	k := key{session, server}
	p.mu.Lock()
	in := p.all[k]
	if in != nil && in.dead.Load() {
		delete(p.all, k)
		in = nil
	}
	fresh := in == nil
	if fresh {
		if err := p.makeRoomLocked(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		in = &instance{key: k}
		in.stale.Store(true)
		p.all[k] = in
	}
	in.busy++
	p.mu.Unlock()
	in.mu.Lock()
	if fresh {
		sb, err := p.start(server, srv)
		if err != nil {
			in.dead.Store(true)
			p.release(in)
			return nil, err
		}
		in.sb, in.finals = sb, make(chan final, 1)
		go in.read(p.cfg.Log)
	}
	if in.dead.Load() {
		p.release(in)
		return nil, errDead
	}
	return in, nil
}

func (p *Pool) release(in *instance) {
	in.mu.Unlock()
	p.mu.Lock()
	in.lastUse = time.Now()
	in.busy--
	if in.dead.Load() && p.all[in.key] == in {
		delete(p.all, in.key)
	}
	p.mu.Unlock()
}

// makeRoomLocked ends the least recently used idle instance when the pool
// is full; with none idle, the call fails at once, never queued.
func (p *Pool) makeRoomLocked() error {
	if len(p.all) < p.cfg.MCP.MaxInstances {
		return nil
	}
	var lru *instance
	for _, in := range p.all {
		if in.busy == 0 && (lru == nil || in.lastUse.Before(lru.lastUse)) {
			lru = in
		}
	}
	if lru == nil {
		return fmt.Errorf("all %d MCP instances are busy ([mcp] max_instances)", p.cfg.MCP.MaxInstances)
	}
	delete(p.all, lru.key)
	lru.dead.Store(true)
	go lru.sb.Close(time.Second)
	return nil
}

// start runs server's sandbox.
func (p *Pool) start(name wire.McpServer, srv config.MCPServer) (*sandbox.Instance, error) {
	if srv.Remote() {
		return p.startRemote(name, srv)
	}
	mounts, err := p.mounts(srv)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", name, err)
	}
	lim := p.cfg.Limits
	lim.MemoryBytes, lim.Processes = int64(srv.MemoryMB)<<20, int64(srv.Processes)
	job := toolrun.MCPJob{Server: name, Command: srv.Command, Env: srv.Environ(toolrun.MCPHome, toolrun.MCPTmp),
		Mounts: sandbox.JobMounts(mounts), System: p.cfg.System, Limits: lim}
	return sandbox.StartMCP(sandbox.MCPSpec{Bwrap: p.cfg.Bwrap, Executable: p.cfg.Executable, RunAs: p.cfg.RunAs,
		Mounts: mounts, TmpBytes: 256 << 20, Job: job})
}

// mounts are ro and rw at their own paths. A path that is a symlink is
// refused rather than followed, and none may reach brokerd's own state.
func (p *Pool) mounts(srv config.MCPServer) ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	add := func(paths []string, writable bool) error {
		for _, path := range paths {
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return err
			}
			if real != path {
				return fmt.Errorf("%s is a symlink to %s; name the real path in ro or rw", path, real)
			}
			for _, f := range p.cfg.Forbidden {
				if within(real, f) || within(f, real) {
					return fmt.Errorf("%s would expose brokerd's own %s", path, f)
				}
			}
			out = append(out, sandbox.Mount{Host: real, Path: real, Writable: writable})
		}
		return nil
	}
	if err := add(srv.RO, false); err != nil {
		return nil, err
	}
	return out, add(srv.RW, true)
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// CloseSession ends session's instances.
func (p *Pool) CloseSession(session wire.SessionID) {
	p.mu.Lock()
	var ended []*instance
	for k, in := range p.all {
		if k.session == session {
			ended = append(ended, in)
			delete(p.all, k)
		}
	}
	p.mu.Unlock()
	for _, in := range ended {
		in.dead.Store(true)
		if in.sb != nil {
			go in.sb.Close(time.Second)
		}
	}
}

// Count is how many instances run.
func (p *Pool) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

// reap ends instances idle for [mcp] idle.
func (p *Pool) reap() {
	t := time.NewTicker(max(p.cfg.MCP.Idle.D()/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		var idle []*instance
		for k, in := range p.all {
			if in.busy == 0 && time.Since(in.lastUse) > p.cfg.MCP.Idle.D() {
				idle = append(idle, in)
				delete(p.all, k)
			}
		}
		p.mu.Unlock()
		for _, in := range idle {
			p.cfg.Log(fmt.Sprintf("mcp %s (session %s): idle, ended", in.key.server, in.key.session))
			in.dead.Store(true)
			go in.sb.Close(time.Second)
		}
	}
}

// Close ends every instance.
func (p *Pool) Close() {
	close(p.stop)
	p.mu.Lock()
	all := slices.Collect(func(yield func(*instance) bool) {
		for _, in := range p.all {
			if !yield(in) {
				return
			}
		}
	})
	p.all = map[key]*instance{}
	p.mu.Unlock()
	for _, in := range all {
		in.dead.Store(true)
		if in.sb != nil {
			in.sb.Close(time.Second)
		}
	}
}

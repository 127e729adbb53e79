package toolkit

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"syscall"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/roles/toolkit/internal/mcpclient"

	"github.com/urfave/cli/v3"
)

// runMCP is `boxmaker toolkit mcp` (DESIGN.md section 16): it reads its
// MCPJob on fd 3, confines itself as every tool does (rlimits, Landlock,
// seccomp), and only then starts the server as its child, which inherits
// all three; then it answers brokerd's frames until brokerd closes stdin.
func runMCP(ctx context.Context, cmd *cli.Command) error {
	job, err := readMCPJob()
	if err != nil {
		return err
	}
	if err := confineMCP(job); err != nil {
		return fmt.Errorf("toolkit: not running MCP server %s unconfined: %w", job.Server, err)
	}
	l := job.Limits
	lim := mcpclient.Limits{ResultBytes: int(l.ResultBytes), CallTime: l.CallTime(), StartTime: l.StartTime(), MaxLine: int(l.MaxLineBytes)}
	if job.URL != "" {
		ch, err := mcpChannel()
		if err != nil {
			return err
		}
		defer ch.Close()
		r := mcpclient.Remote{URL: job.URL, Channel: ch}
		return mcpclient.ServeRemote(ctx, cmd.Reader, cmd.Root().Writer, cmd.Root().ErrWriter, r, lim)
	}
	env := job.Env
	if err := os.MkdirAll(toolrun.MCPHome, 0o700); err != nil {
		return fmt.Errorf("toolkit: %w", err)
	}
	srv := mcpclient.Server{Command: job.Command, Env: env, Dir: toolrun.MCPHome}
	return mcpclient.Serve(ctx, cmd.Reader, cmd.Root().Writer, cmd.Root().ErrWriter, srv, lim)
}

// mcpChannel is a remote instance's one way out: fd 4, its channel to
// egressd (the sandbox has no network).
func mcpChannel() (*net.UnixConn, error) {
	f := os.NewFile(toolrun.MCPChannelFD, "mcp-channel")
	if f == nil {
		return nil, fmt.Errorf("toolkit: no egress channel on fd %d", toolrun.MCPChannelFD)
	}
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("toolkit: egress channel: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("toolkit: fd %d is not a Unix socket", toolrun.MCPChannelFD)
	}
	return uc, nil
}

func readMCPJob() (toolrun.MCPJob, error) {
	f := os.NewFile(toolrun.MCPJobFD, "mcp-job")
	if f == nil {
		return toolrun.MCPJob{}, fmt.Errorf("toolkit: no MCP job on fd %d", toolrun.MCPJobFD)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, toolrun.MaxJobBytes+1))
	if err != nil {
		return toolrun.MCPJob{}, fmt.Errorf("toolkit: read MCP job: %w", err)
	}
	if len(data) > toolrun.MaxJobBytes {
		return toolrun.MCPJob{}, fmt.Errorf("toolkit: MCP job over %d bytes", toolrun.MaxJobBytes)
	}
	job, err := toolrun.DecodeMCPJob(data)
	if err != nil {
		return toolrun.MCPJob{}, fmt.Errorf("toolkit: %w", err)
	}
	return job, nil
}

// confineMCP is confine for an instance. RLIMIT_CPU is not set: CPU and
// wall time bound each call (the client's call timeout ends a hung one),
// not the instance's life. RLIMIT_DATA bounds what the server maps
// writable; unlike RLIMIT_AS it leaves Node.js's reserved address space
// alone.
//
// WARNING: the order is confine's: rlimits, Landlock, then seccomp, all
// before the server starts, so that it inherits every fence.
func confineMCP(job toolrun.MCPJob) error {
	l := job.Limits
	for _, r := range []struct {
		resource  int
		soft, max uint64
	}{
		{syscall.RLIMIT_CORE, 0, 0},
		{syscall.RLIMIT_DATA, uint64(l.MemoryBytes), uint64(l.MemoryBytes)},
		{syscall.RLIMIT_FSIZE, uint64(l.FileBytes), uint64(l.FileBytes)},
		{syscall.RLIMIT_NOFILE, openFiles * 4, openFiles * 4},
		{rlimitNproc, uint64(l.Processes), uint64(l.Processes)},
	} {
		if err := syscall.Setrlimit(r.resource, &syscall.Rlimit{Cur: r.soft, Max: r.max}); err != nil {
			return fmt.Errorf("rlimits: resource %d: %w", r.resource, err)
		}
	}
	debug.SetMemoryLimit(256 << 20) // toolkit's own heap: results are cut far below
	if err := restrictPaths(job.Mounts, &job.System); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := installSeccomp(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

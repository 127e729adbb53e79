package toolkit

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"boxmaker/roles"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// Command is the toolkit role: `boxmaker toolkit <tool>`.
func Command() *cli.Command {
	return &cli.Command{
		Name:      "toolkit",
		Usage:     "run one tool inside its sandbox (brokerd starts this; it is not for people)",
		ArgsUsage: "TOOL",
		Description: "Reads one job on stdin, confines itself (rlimits, landlock, seccomp), runs\n" +
			"TOOL, which must be the job's tool, and writes one output on stdout.",
		Action: runAction,
	}
}

func runAction(ctx context.Context, cmd *cli.Command) error {
	if cmd.NArg() != 1 {
		return roles.Usagef("toolkit: name exactly one TOOL")
	}
	tool := cmd.Args().First()
	if tool == toolrun.MCPTool {
		return runMCP(ctx, cmd) // an MCP instance (mcp.go): frames, not one job
	}
	if _, ok := wire.ToolByName(tool); !ok {
		return roles.Usagef("toolkit: no tool named %q", tool)
	}
	job, err := readJob(cmd.Reader)
	if err != nil {
		return err
	}
	if job.Tool != tool {
		return fmt.Errorf("toolkit: started for %s but the job is for %s", tool, job.Tool)
	}
	if err := confine(job); err != nil {
		return fmt.Errorf("toolkit: not running %s unconfined: %w", tool, err)
	}
	out := runJob(ctx, job)
	data, err := encodeFitted(out, job.Limits.OutputBytes)
	if err != nil {
		return fmt.Errorf("toolkit: %w", err)
	}
	_, err = cmd.Root().Writer.Write(data)
	return err
}

// readJob reads and decodes the whole job, refusing one over MaxJobBytes.
func readJob(r io.Reader) (toolrun.Job, error) {
	data, err := io.ReadAll(io.LimitReader(r, toolrun.MaxJobBytes+1))
	if err != nil {
		return toolrun.Job{}, fmt.Errorf("toolkit: read job: %w", err)
	}
	if len(data) > toolrun.MaxJobBytes {
		return toolrun.Job{}, fmt.Errorf("toolkit: job over %d bytes", toolrun.MaxJobBytes)
	}
	job, err := toolrun.DecodeJob(data)
	if err != nil {
		return toolrun.Job{}, fmt.Errorf("toolkit: %w", err)
	}
	return job, nil
}

// runJob runs the confined job's tool with the sandbox's layout.
func runJob(ctx context.Context, job toolrun.Job) toolrun.Output {
	t := &tools{job: job, memory: toolrun.MemoryDir}
	if job.Egress {
		conn, err := egressConn()
		if err != nil {
			return failed(job.Tool, "no egress connection: %v", err)
		}
		defer conn.Close()
		t.egress = conn
	}
	return t.run(ctx)
}

// egressConn wraps fd 3, the connection brokerd handed in for egressd.
func egressConn() (net.Conn, error) {
	f := os.NewFile(toolrun.EgressFD, "egress")
	defer f.Close()
	return net.FileConn(f)
}

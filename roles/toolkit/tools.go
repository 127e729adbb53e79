package toolkit

import (
	"context"
	"fmt"
	"net"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// tools runs one job's tool. memory is where the notes entries are mounted
// (toolrun.MemoryDir in the sandbox, a directory of the test elsewhere).
type tools struct {
	job    toolrun.Job
	memory string
	egress net.Conn // fd 3, nil unless the job has egress
}

// implementations is toolkit's code for each tool of the catalog, by name,
// as gobusybox keeps its commands: one map, no registration at import time.
// TestEveryToolIsImplemented proves it names exactly the catalog's tools,
// each with the argument type the catalog decodes.
var implementations = map[string]implementation{
	"http_fetch":   implement((*tools).httpFetch),
	"file_read":    implement((*tools).fileRead),
	"notes_read":   implement((*tools).notesRead),
	"notes_write":  implement((*tools).notesWrite),
	"notes_search": implement((*tools).notesSearch),
	"shell":        implement((*tools).shell),
	"consult":      implement((*tools).consult),
}

// implementation runs one tool on arguments the catalog decoded.
type implementation struct {
	run   func(t *tools, ctx context.Context, args wire.ToolArgs) toolrun.Output
	takes func(args wire.ToolArgs) bool // reports whether run takes this argument type
}

// implement wraps a tool's method, typed by its arguments, for the map.
func implement[A wire.ToolArgs](f func(t *tools, ctx context.Context, a A) toolrun.Output) implementation {
	return implementation{
		run: func(t *tools, ctx context.Context, args wire.ToolArgs) toolrun.Output {
			a, ok := args.(A)
			if !ok {
				return failed(t.job.Tool, "toolkit's code takes other arguments than the catalog decodes (%T)", args)
			}
			return f(t, ctx, a)
		},
		takes: func(args wire.ToolArgs) bool { _, ok := args.(A); return ok },
	}
}

func (t *tools) run(ctx context.Context) toolrun.Output {
	args, err := wire.DecodeToolArgs(t.job.Tool, t.job.Arguments)
	if err != nil {
		return failed(t.job.Tool, "%v", err)
	}
	impl, ok := implementations[t.job.Tool]
	if !ok {
		return failed(t.job.Tool, "toolkit has no code for this tool")
	}
	return impl.run(t, ctx, args)
}

// succeeded is a tool's answer.
func succeeded(content string) toolrun.Output {
	return toolrun.Output{OK: true, Content: content}
}

// failed is a tool's refusal or failure, led by the tool's name.
func failed(tool, format string, args ...any) toolrun.Output {
	return toolrun.Output{Content: tool + ": " + fmt.Sprintf(format, args...)}
}

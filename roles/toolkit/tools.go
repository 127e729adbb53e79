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

func (t *tools) run(ctx context.Context) toolrun.Output {
	args, err := wire.DecodeToolArgs(t.job.Tool, t.job.Arguments)
	if err != nil {
		return failed(t.job.Tool, "%v", err)
	}
	switch a := args.(type) {
	case wire.FileReadArgs:
		return t.fileRead(a)
	case wire.NotesReadArgs:
		return t.notesRead(a)
	case wire.NotesWriteArgs:
		return t.notesWrite(a)
	case wire.NotesSearchArgs:
		return t.notesSearch(a)
	case wire.ShellArgs:
		return t.shell(ctx, a)
	case wire.HTTPFetchArgs:
		return t.httpFetch(a)
	case wire.ConsultArgs:
		return t.consult(a)
	default:
		return failed(t.job.Tool, "toolkit has no code for this tool")
	}
}

// succeeded is a tool's answer.
func succeeded(content string) toolrun.Output {
	return toolrun.Output{OK: true, Content: content}
}

// failed is a tool's refusal or failure, led by the tool's name.
func failed(tool, format string, args ...any) toolrun.Output {
	return toolrun.Output{Content: tool + ": " + fmt.Sprintf(format, args...)}
}

package bxctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// mcpCall is `boxmaker mcp call NAME TOOL JSON`: one call as the model would
// make it, in a session brokerd mints for it, waiting for an approval like
// `chat --message`. The result's content goes to stdout (sanitized), its
// status to stderr; it exits 1 unless the call ran.
func mcpCall(ctx context.Context, cmd *cli.Command) error {
	server, err := serverArg(cmd, 3, "mcp call takes NAME TOOL JSON, such as: mcp call files read_text_file '{\"path\":\"/srv/a.txt\"}'")
	if err != nil {
		return err
	}
	tool := wire.McpToolName(cmd.Args().Get(1))
	if err := tool.Check(); err != nil {
		return usagef("mcp call: %v", err)
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	path, err := sock.PathOf(paths, "bxctl", "brokerd")
	if err != nil {
		return err
	}
	c, err := sock.Dial(path)
	if err != nil {
		return fmt.Errorf("brokerd is not answering (is boxmaker up?): %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	errw := cmd.Root().ErrWriter
	res, err := c.Call(ctx, wire.McpCall{Server: server, Tool: tool, Arguments: cmd.Args().Get(2)}, func(m wire.Message) error {
		if p, ok := m.(wire.PendingApproval); ok {
			fmt.Fprintf(errw, "waiting for the owner's approval %s until %s: answer it with `boxmaker approvals`\n", p.Approval, p.Expires)
		}
		return nil
	})
	if err != nil {
		return err
	}
	full := wire.McpFullName(server, tool)
	switch r := res.(type) {
	case wire.Result:
		writeContent(cmd.Root().Writer, r.Content)
		trust := "trusted"
		if r.Untrusted {
			trust = "untrusted"
		}
		fmt.Fprintf(errw, "%s: result, %s, %s, truncated %v\n", full, r.Class, trust, r.Truncated)
		return nil
	case wire.Failed:
		// brokerd's message already names the tool for the model; the
		// owner reads the name once.
		return fmt.Errorf("%s: failed: %s", full, termtext.Line(strings.TrimPrefix(r.Message, full+": ")))
	case wire.Denied:
		return errors.New(mcpDenial(full, cmd.Args().Get(2), r.Reason))
	}
	return errors.New("brokerd answered " + wire.KindOf(res))
}

// mcpDenial says what a denial of `mcp call` means, as the chat does, and
// where the grants decided it, the line that shows why (mcp call's session
// is its own, private and trusted).
func mcpDenial(full, args string, reason wire.DenyReason) string {
	line := fmt.Sprintf("%s: denied %s", full, reason)
	if words, ok := denialWords[reason]; ok {
		line += ": " + words
	}
	if explainable[reason] {
		line += "; see why with: " + explainCommand(wire.ToolCallEvent{Tool: full, Arguments: args}, nil)
	}
	return line
}

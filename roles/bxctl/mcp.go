package bxctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// mcpCommand is `boxmaker mcp pin|list|diff|call` (DESIGN.md section 16).
// Everything a server wrote (names, descriptions, schemas, results) is
// printed through the terminal sanitizer.
func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "pin, list, compare and try the MCP servers of config.toml's [mcp.NAME]",
		Flags: homeFlags(),
		Action: func(context.Context, *cli.Command) error {
			return usagef("mcp: say what to do: mcp pin NAME, mcp list, mcp diff NAME, mcp call NAME TOOL JSON")
		},
		Commands: []*cli.Command{
			{Name: "pin", Usage: "start the server as brokerd would, show its tools, and on yes write etc/mcp/NAME.lock.json",
				ArgsUsage: "NAME", Flags: append(homeFlags(), &cli.BoolFlag{Name: "yes", Usage: "pin without asking (the tools are shown all the same)"}),
				Action: mcpPin},
			{Name: "list", Usage: "each server, its pin, and any difference from the live list brokerd last saw", Flags: homeFlags(), Action: mcpList},
			{Name: "diff", Usage: "how the live list brokerd last saw differs from the pin", ArgsUsage: "NAME", Flags: homeFlags(), Action: mcpDiff},
			{Name: "call", Usage: "make one call as the model would: through brokerd, decided, approved if a grant asks, audited",
				ArgsUsage: "NAME TOOL JSON", Flags: homeFlags(), Action: mcpCall},
		},
	}
}

// mcpDir is etc/mcp, beside grants/.
func mcpDir(p config.Paths) string { return filepath.Join(filepath.Dir(p.Grants), "mcp") }

func serverArg(cmd *cli.Command, n int, usage string) (wire.McpServer, error) {
	if cmd.Args().Len() != n {
		return "", usagef("%s", usage)
	}
	name := cmd.Args().First()
	if err := wire.CheckMcpServer(name); err != nil {
		return "", usagef("%v", err)
	}
	return wire.McpServer(name), nil
}

func mcpPin(ctx context.Context, cmd *cli.Command) error {
	server, err := serverArg(cmd, 1, "mcp pin takes the NAME of an [mcp.NAME] table")
	if err != nil {
		return err
	}
	res, err := callBrokerFor(ctx, cmd, wire.McpPin{Server: server}, 2*time.Minute)
	if err != nil {
		return err
	}
	pr, ok := res.(wire.McpPinResult)
	switch {
	case !ok:
		return fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	case pr.Live == nil:
		msg := ""
		if pr.Error != nil {
			msg = string(*pr.Error)
		}
		return fmt.Errorf("mcp pin %s: brokerd could not list its tools: %s", server, termtext.Line(msg))
	}
	lock, err := policy.NewLock(server, *pr.Live)
	if err != nil {
		return fmt.Errorf("mcp pin %s: %s", server, termtext.Line(err.Error()))
	}
	pins, err := policy.ParseLock(lock)
	if err != nil {
		return fmt.Errorf("mcp pin %s: %s", server, termtext.Line(err.Error()))
	}
	out := cmd.Root().Writer
	showPins(out, pins)
	if !cmd.Bool("yes") && !confirm(cmd, fmt.Sprintf("Pin these %d tools of %s? Only y or yes pins: ", len(lock.Tools), server)) {
		return errors.New("not pinned")
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	data, err := policy.EncodeLock(lock)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(mcpDir(paths), 0o755); err != nil {
		return err
	}
	file := policy.LockFile(mcpDir(paths), server)
	if err := atomicfile.Write(file, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(cmd.Root().ErrWriter, "pinned %d tools of %s in %s; brokerd uses the pin from the next call\n", len(lock.Tools), server, file)
	return nil
}

// showPins prints a server and each tool: name, description, input schema
// and annotations, the server's words sanitized, its claims named as such.
func showPins(w io.Writer, p *policy.Pins) {
	l := p.Lock
	fmt.Fprintf(w, "server %s: %s %s (protocol %s), %d tools\n", l.Server, termtext.Line(l.Name), termtext.Line(l.Version), termtext.Line(l.Protocol), len(l.Tools))
	for _, lt := range l.Tools {
		t := p.Tools[lt.Name]
		fmt.Fprintf(w, "\n  %s\n", wire.McpFullName(l.Server, t.Name))
		fmt.Fprintf(w, "    description: %s\n", indentDesc(termtext.Clean(t.Description)))
		fmt.Fprintf(w, "    input schema: %s\n", termtext.Line(t.InputSchema))
		fmt.Fprintf(w, "    the server claims: %s\n", claims(t))
		if t.Unusable != "" {
			fmt.Fprintf(w, "    UNUSABLE: %s\n", termtext.Line(t.Unusable))
		}
		fmt.Fprintf(w, "    sha256: %s\n", t.Hash)
	}
}

func claims(t *policy.PinnedTool) string {
	if c := t.Claims(); c != "" {
		return c + " (not trusted)"
	}
	return "nothing"
}

func indentDesc(s string) string { return strings.ReplaceAll(s, "\n", "\n      ") }

// confirm asks on stderr and reads one line of stdin: only y or yes agree.
func confirm(cmd *cli.Command, question string) bool {
	fmt.Fprint(cmd.Root().ErrWriter, question)
	line, _ := bufio.NewReader(cmd.Root().Reader).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

func callBrokerFor(ctx context.Context, cmd *cli.Command, msg wire.Message, limit time.Duration) (wire.Message, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return nil, err
	}
	path, err := sock.PathOf(paths, "bxctl", "brokerd")
	if err != nil {
		return nil, err
	}
	c, err := sock.Dial(path)
	if err != nil {
		return nil, fmt.Errorf("brokerd is not answering at %s (is boxmaker up?): %w", path, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return c.Call(ctx, msg, nil)
}

// serverView is one server as `mcp list` and `mcp diff` see it.
type serverView struct {
	name    wire.McpServer
	pins    *policy.Pins // nil: not pinned, or the lock is bad (lockErr)
	lockErr error
	live    *wire.McpToolsResult // nil: brokerd has not seen it
}

func viewServers(ctx context.Context, cmd *cli.Command) ([]serverView, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return nil, err
	}
	seen := map[wire.McpServer]*wire.McpToolsResult{}
	if res, err := callBroker(ctx, cmd, wire.McpList{}); err == nil {
		if lr, ok := res.(wire.McpListResult); ok {
			for _, s := range lr.Servers {
				seen[s.Server] = s.Live
			}
		}
	} else {
		fmt.Fprintf(cmd.Root().ErrWriter, "brokerd: %v; the live lists are unknown\n", err)
	}
	var views []serverView
	for _, name := range cfg.MCP.Names() {
		v := serverView{name: name, live: seen[name]}
		v.pins, v.lockErr = policy.ReadLock(mcpDir(paths), name)
		if errors.Is(v.lockErr, fs.ErrNotExist) {
			v.lockErr = nil
		}
		views = append(views, v)
	}
	return views, nil
}

// differences lists how live differs from the pin, one line each.
func differences(v serverView) []string {
	if v.live == nil || v.pins == nil {
		return nil
	}
	var out []string
	listed := map[wire.McpToolName]bool{}
	for _, d := range v.live.Tools {
		listed[d.Name] = true
		t := v.pins.Tools[d.Name]
		switch {
		case t == nil:
			out = append(out, fmt.Sprintf("new, not pinned (never offered): %s", wire.McpFullName(v.name, d.Name)))
		case !t.Matches(d):
			out = append(out, fmt.Sprintf("changed since the pin (denied unpinned_tool): %s\n      live definition: %s",
				wire.McpFullName(v.name, d.Name), termtext.Line(string(d.Definition))))
		}
	}
	for _, lt := range v.pins.Lock.Tools {
		if !listed[lt.Name] {
			out = append(out, fmt.Sprintf("pinned but no longer listed: %s", wire.McpFullName(v.name, lt.Name)))
		}
	}
	return out
}

func mcpList(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("mcp list takes no arguments")
	}
	views, err := viewServers(ctx, cmd)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if len(views) == 0 {
		fmt.Fprintln(w, "no MCP servers: config.toml has no [mcp.NAME]")
	}
	for _, v := range views {
		switch {
		case v.lockErr != nil:
			fmt.Fprintf(w, "%s: bad lock, ignored by brokerd: %s\n", v.name, termtext.Line(v.lockErr.Error()))
		case v.pins == nil:
			fmt.Fprintf(w, "%s: not pinned (boxmaker mcp pin %s)\n", v.name, v.name)
		default:
			unusable := 0
			for _, t := range v.pins.Tools {
				if t.Unusable != "" {
					unusable++
				}
			}
			fmt.Fprintf(w, "%s: %d tools pinned (%s %s), %d unusable\n", v.name, len(v.pins.Tools),
				termtext.Line(v.pins.Lock.Name), termtext.Line(v.pins.Lock.Version), unusable)
		}
		if v.live == nil {
			fmt.Fprintf(w, "  live list: not seen by brokerd yet\n")
		}
		for _, d := range differences(v) {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	return nil
}

func mcpDiff(ctx context.Context, cmd *cli.Command) error {
	server, err := serverArg(cmd, 1, "mcp diff takes the NAME of an [mcp.NAME] table")
	if err != nil {
		return err
	}
	views, err := viewServers(ctx, cmd)
	if err != nil {
		return err
	}
	for _, v := range views {
		if v.name != server {
			continue
		}
		if v.pins == nil || v.live == nil {
			return fmt.Errorf("mcp diff %s: nothing to compare (pinned: %v, live list seen: %v)", server, v.pins != nil, v.live != nil)
		}
		diffs := differences(v)
		if len(diffs) == 0 {
			fmt.Fprintf(cmd.Root().Writer, "%s: the live list is the pinned one\n", server)
			return nil
		}
		for _, d := range diffs {
			fmt.Fprintln(cmd.Root().Writer, d)
		}
		return fmt.Errorf("%s differs from its pin in %d tools", server, len(diffs))
	}
	return fmt.Errorf("config.toml declares no [mcp.%s]", server)
}

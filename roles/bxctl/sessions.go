package bxctl

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func sessionsCommand() *cli.Command {
	return &cli.Command{
		Name:   "sessions",
		Usage:  "list the sessions loopd keeps (read from sessions/ when loopd is down)",
		Flags:  withJSON("an array of objects: session, epoch, updated, turns"),
		Action: listSessions,
		Commands: []*cli.Command{{
			Name:      "show",
			Usage:     "print one session's current epoch readably",
			ArgsUsage: "NAME",
			Flags:     homeFlags(),
			Action:    showSession,
		}},
	}
}

func callLoopd(ctx context.Context, cmd *cli.Command, m wire.Message) (wire.Message, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return nil, err
	}
	c, err := dialLoopd(paths)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := c.Call(ctx, m, nil)
	return res, loopdSaid(err)
}

func listSessions(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("sessions: no command named %q; valid: show", cmd.Args().First())
	}
	list, err := sessionList(ctx, cmd)
	if err != nil {
		return err
	}
	out := cmd.Root().Writer
	if cmd.Bool("json") {
		return printJSON(out, nonNil(list.Sessions))
	}
	if len(list.Sessions) == 0 {
		fmt.Fprintln(out, "no sessions")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tEPOCH\tTURNS\tUPDATED")
	for _, s := range list.Sessions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", s.Session, s.Epoch, s.Turns, s.Updated)
	}
	return tw.Flush()
}

// sessionList asks loopd, or reads sessions/ when loopd is not answering
// (readSessions): the list is the same either way, and stderr says which.
func sessionList(ctx context.Context, cmd *cli.Command) (wire.SessionListResult, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return wire.SessionListResult{}, err
	}
	c, dialErr := dialLoopd(paths)
	if dialErr != nil {
		sessions, skipped, err := readSessions(paths.Home)
		if err != nil {
			return wire.SessionListResult{}, fmt.Errorf("%w; reading %s/sessions instead failed too: %v", dialErr, paths.Home, err)
		}
		errOut := cmd.Root().ErrWriter
		fmt.Fprintf(errOut, "loopd is not answering: read from %s/sessions\n", paths.Home)
		for _, s := range skipped {
			fmt.Fprintln(errOut, termtext.Line(s)) // loopd's files may name anything
		}
		return wire.SessionListResult{Sessions: sessions}, nil
	}
	defer c.Close()
	res, err := c.Call(ctx, wire.SessionList{}, nil)
	if err != nil {
		return wire.SessionListResult{}, loopdSaid(err)
	}
	list, ok := res.(wire.SessionListResult)
	if !ok {
		return wire.SessionListResult{}, fmt.Errorf("loopd answered %s", wire.KindOf(res))
	}
	return list, nil
}

func showSession(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("sessions show takes one session NAME")
	}
	id, err := wire.ParseSessionID(cmd.Args().First())
	if err != nil {
		return usagef("sessions show: %v", err)
	}
	res, err := callLoopd(ctx, cmd, wire.SessionLog{Session: id})
	if err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	log, ok := res.(wire.SessionLogResult)
	if !ok {
		return fmt.Errorf("loopd answered %s", wire.KindOf(res))
	}
	fmt.Fprintf(cmd.Root().Writer, "session %s, epoch %d\n", log.Session, log.Epoch)
	for _, r := range log.Records {
		writeRecord(cmd.Root().Writer, r)
	}
	return nil
}

// writeRecord prints one log record for people. Everything the model, a
// tool or a user wrote goes through the terminal sanitizer.
func writeRecord(w io.Writer, r wire.LogRecord) {
	switch r := r.(type) {
	case wire.SessionStart:
		fmt.Fprintf(w, "%s  start: slot %d, baseline %s\n", r.Time, r.Slot, r.Baseline.String()[:12])
	case wire.User:
		fmt.Fprintf(w, "%s  you: %s\n", r.Time, termtext.Clean(r.Content))
	case wire.Assistant:
		if r.ReasoningContent != nil {
			fmt.Fprintf(w, "%s  (reasoning) %s\n", r.Time, termtext.Clean(*r.ReasoningContent))
		}
		for _, c := range r.ToolCalls {
			fmt.Fprintf(w, "%s  calls %s %s\n", r.Time, termtext.Line(c.Name), termtext.Line(c.Arguments))
		}
		if r.Content != nil && *r.Content != "" {
			fmt.Fprintf(w, "%s  boxmaker: %s\n", r.Time, termtext.Clean(*r.Content))
		}
	case wire.ToolResult:
		fmt.Fprintf(w, "%s  result of call %d (%s, untrusted %t, truncated %t):\n%s\n", r.Time, r.Call, r.Class, r.Untrusted, r.Truncated, termtext.Clean(r.Content))
	case wire.CacheLoss:
		fmt.Fprintf(w, "%s  cache loss: expected %d tokens reused, got %d\n", r.Time, r.Expected, r.Got)
	case wire.EpochEnd:
		fmt.Fprintf(w, "%s  epoch ends; epoch %d starts from the summary: %s\n", r.Time, r.Next, termtext.Clean(r.Summary))
	}
}

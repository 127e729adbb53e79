package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func approvalCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "approvals",
		Usage: "list the tool calls waiting for your approval, as brokerd describes them",
		Flags: append(homeFlags(), &cli.BoolFlag{
			Name:  "json",
			Usage: "an array of objects: approval, session, call, tool, subject, arguments, grant, session_taint, session_untrusted, expires",
		}),
		Action: listApprovals,
	}, {
		Name:      "approve",
		Usage:     "approve a pending tool call",
		ArgsUsage: "ID",
		Flags:     homeFlags(),
		Action:    func(ctx context.Context, cmd *cli.Command) error { return answerApproval(ctx, cmd, true) },
	}, {
		Name:      "deny",
		Usage:     "refuse a pending tool call",
		ArgsUsage: "ID",
		Flags:     homeFlags(),
		Action:    func(ctx context.Context, cmd *cli.Command) error { return answerApproval(ctx, cmd, false) },
	}}
}

// callBroker sends one message on the owner's socket to brokerd.
func callBroker(ctx context.Context, cmd *cli.Command, msg wire.Message) (wire.Message, error) {
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
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Call(ctx, msg, nil)
}

func listApprovals(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("approvals takes no arguments")
	}
	m, err := callBroker(ctx, cmd, wire.ApprovalList{})
	if err != nil {
		return err
	}
	res, ok := m.(wire.ApprovalListResult)
	if !ok {
		return fmt.Errorf("brokerd answered %s", wire.KindOf(m))
	}
	out := cmd.Root().Writer
	if cmd.Bool("json") {
		b, err := wire.Marshal(&res.Approvals)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	writeApprovals(out, res.Approvals)
	return nil
}

// writeApprovals shows each approval as the chat prompt does: the subject
// first, then the arguments as sanitized data.
func writeApprovals(out io.Writer, list []wire.Approval) {
	if len(list) == 0 {
		fmt.Fprintln(out, "no pending approvals")
		return
	}
	for _, a := range list {
		describeApproval(out, a)
	}
}

func answerApproval(ctx context.Context, cmd *cli.Command, approve bool) error {
	if cmd.Args().Len() != 1 {
		return usagef("%s takes one approval ID (see boxmaker approvals)", cmd.Name)
	}
	id := cmd.Args().First()
	m, err := callBroker(ctx, cmd, wire.ApprovalAnswer{Approval: id, Approve: approve})
	if err != nil {
		return err
	}
	res, ok := m.(wire.ApprovalAnswerResult)
	if !ok {
		return fmt.Errorf("brokerd answered %s", wire.KindOf(m))
	}
	if res.Outcome == wire.OutcomeUnknown {
		return errors.New("no pending approval " + id + ": it was answered, it expired, or it never existed")
	}
	fmt.Fprintf(cmd.Root().Writer, "%s %s\n", res.Outcome, id)
	return nil
}

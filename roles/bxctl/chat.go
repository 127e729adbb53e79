package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func chatCommand() *cli.Command {
	return &cli.Command{
		Name:  "chat",
		Usage: "talk to boxmaker: interactive in a terminal, or one message with --message (or on stdin)",
		Flags: append(homeFlags(),
			&cli.StringFlag{Name: "session", Usage: "resume this session (default: a new one)"},
			&cli.StringFlag{Name: "message", Usage: "send this one message, print the reply on stdout, and exit"},
			&cli.DurationFlag{Name: "wait", Usage: "wait this long for loopd to answer (while boxmaker up starts)"},
			&cli.StringFlag{Name: "approvals", Value: approvalsWait, Usage: "without a terminal, what to do with an approval the turn asks for: wait (for an answer elsewhere, at most --approval-wait, then refuse) or deny (refuse at once)"},
			&cli.DurationFlag{Name: "approval-wait", Value: defaultApprovalWait, Usage: "without a terminal, how long --approvals=wait waits for each approval before refusing it"},
			&cli.BoolFlag{Name: "json", Usage: "without a terminal, print the turn as one JSON object on stdout: session, reply, calls (call, tool, arguments, outcome, detail), error"},
		),
		Action: chat,
	}
}

// chatter runs turns against loopd and shows them.
type chatter struct {
	paths   config.Paths
	session *wire.SessionID
	shown   wire.SessionID // the session last named on screen
	loop    *sock.Client
	view    view
	calls   map[wire.CallID]wire.ToolCallEvent // this turn's calls
	order   []wire.CallID                      // in the order made
	results map[wire.CallID]wire.ToolResultEvent
	reply   string   // the turn's final reply
	oneShot *oneShot // how a chat without a terminal treats approvals; nil in a terminal
	unmet   []string // this turn's calls that were denied or failed
	// asked holds this turn's approvals that are pending and not yet
	// answered here, by approval id: an interrupted turn refuses them.
	asked map[string]wire.CallID
	// grantAfter holds the always-allow grants to write once their call
	// is decided.
	grantAfter map[wire.CallID]alwaysGrant
	// relay, when set, takes the turn's events instead of event: the
	// interactive chat reads them on its own goroutine, beside the keys.
	relay func(any) error
	// waiting says what the turn waits for now, for the status line.
	waiting string
}

// view is where a turn is shown: a terminal, or stdout and stderr.
type view interface {
	delta(text string)
	reasoning(text string)
	activity(line string)
	done(content string)
	handle(ref wire.HandleRef, content string) // a handle the reply mentions, for the owner
	askApproval(a wire.Approval) *bool         // nil when it cannot ask
}

func chat(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("chat takes no arguments; use --message TEXT")
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	c := &chatter{paths: paths}
	if name := cmd.String("session"); name != "" {
		id, err := wire.ParseSessionID(name)
		if err != nil {
			return usagef("--session: %v", err)
		}
		c.session = &id
	}
	// The message is read and checked first: a bad one needs no loopd.
	msg, oneShot := cmd.String("message"), cmd.IsSet("message")
	tty, isTTY := terminalOf(cmd.Root().Reader)
	if !oneShot && !isTTY {
		if msg, err = readMessage(cmd.Root().Reader); err != nil {
			return err
		}
		oneShot = true
	}
	if oneShot {
		if err := checkMessage(msg); err != nil {
			return err
		}
	}
	if c.loop, err = waitForLoopd(ctx, paths, cmd.Duration("wait")); err != nil {
		return err
	}
	defer func() { c.loop.Close() }() // the connection may be replaced (reconnect)
	if oneShot {
		return c.once(ctx, cmd, msg)
	}
	return c.interactive(ctx, tty)
}

// once runs the one turn of a chat without a terminal.
func (c *chatter) once(ctx context.Context, cmd *cli.Command, msg string) error {
	approvals, err := parseApprovals(cmd.String("approvals"))
	if err != nil {
		return err
	}
	c.oneShot = &oneShot{approvals: approvals, wait: cmd.Duration("approval-wait")}
	defer c.oneShot.stop()
	asJSON := cmd.Bool("json")
	v := plainView{out: cmd.Root().Writer, err: cmd.Root().ErrWriter, mu: &sync.Mutex{}}
	if asJSON {
		v.out = io.Discard // the reply is in the JSON
	}
	c.view = v
	err = c.turn(ctx, msg)
	if err == nil {
		err = c.unmetError()
	}
	if asJSON {
		if jerr := c.writeJSON(cmd.Root().Writer, c.reply, err); jerr != nil {
			return jerr
		}
	}
	return err
}

// turn sends one message and shows the turn until chat_done.
func (c *chatter) turn(ctx context.Context, content string) error {
	if err := checkMessage(content); err != nil {
		return err
	}
	c.startTurn()
	final, err := c.send(ctx, content)
	return c.endTurn(ctx, final, err)
}

// startTurn forgets the last turn's calls.
func (c *chatter) startTurn() {
	c.calls, c.unmet, c.asked = map[wire.CallID]wire.ToolCallEvent{}, nil, map[string]wire.CallID{}
	c.grantAfter = map[wire.CallID]alwaysGrant{}
	c.order, c.results = nil, map[wire.CallID]wire.ToolResultEvent{}
	c.waiting = "the model"
}

// endTurn shows how the turn ended.
func (c *chatter) endTurn(ctx context.Context, final wire.Message, err error) error {
	c.writeGrantsLeft()
	if err != nil {
		if hint := modelHint(c.paths, err); hint != "" {
			return fmt.Errorf("chat: %w; %s", loopdSaid(err), hint)
		}
		return fmt.Errorf("chat: %w", loopdSaid(err))
	}
	done, ok := final.(wire.ChatDone)
	if !ok {
		return fmt.Errorf("chat: loopd answered %s", wire.KindOf(final))
	}
	c.session = &done.Session
	c.reply = done.Content
	c.view.done(done.Content)
	c.showHandles(ctx, done.Session, done.Content)
	return nil
}

func (c *chatter) event(ctx context.Context, m wire.Message) error {
	switch e := m.(type) {
	case wire.SessionEvent:
		c.session = &e.Session
		if e.Session != c.shown { // named once, and again only if it changes
			c.shown = e.Session
			c.view.activity("session " + e.Session.String())
		}
	case wire.Delta:
		c.view.delta(e.Text)
	case wire.Reasoning:
		c.view.reasoning(e.Text)
	case wire.ToolCallEvent:
		c.calls[e.Call] = e
		c.order = append(c.order, e.Call)
		c.waiting = fmt.Sprintf("call %d (%s) to finish", e.Call, e.Tool)
		c.view.activity(fmt.Sprintf("call %d: %s %s", e.Call, e.Tool, e.Arguments))
	case wire.ToolResultEvent:
		c.waiting = "the model"
		c.results[e.Call] = e
		for id, call := range c.asked {
			if call == e.Call {
				delete(c.asked, id)
			}
		}
		if e.Outcome != "result" {
			c.unmet = append(c.unmet, fmt.Sprintf("call %d (%s) %s: %s", e.Call, c.calls[e.Call].Tool, e.Outcome, e.Detail))
		}
		c.view.activity(fmt.Sprintf("call %d: %s: %s", e.Call, e.Outcome, e.Detail))
		c.writeGrantAfter(e.Call)
		if e.Outcome == "denied" {
			c.view.activity(c.denialHelp(e))
		}
	case wire.ApprovalPendingEvent:
		c.asked[e.Approval] = e.Call
		c.waiting = "approval " + e.Approval
		return c.approval(ctx, e)
	}
	return nil
}

// unmetError fails a turn whose reply came but not every call it made
// ran: the owner (or a script) asked for something that did not happen,
// and the status says so (DESIGN.md section 2: a denied or failed turn is 1).
func (c *chatter) unmetError() error {
	if len(c.unmet) == 0 {
		return nil
	}
	return fmt.Errorf("chat: the turn ended, but not every tool call ran: %s", strings.Join(c.unmet, "; "))
}

// loopdSaid is an error loopd answered, as the owner should read it: a
// request loopd refused (bad_message) says why in its detail, and the code
// would add only jargon.
func loopdSaid(err error) error {
	var we wire.WireError
	if errors.As(err, &we) && we.Code == wire.BadMessage && we.Detail != "" {
		return errors.New(we.Detail)
	}
	return err
}

// approval shows a pending approval as brokerd describes it, never as loopd
// does, and answers brokerd directly when the owner can be asked.
func (c *chatter) approval(ctx context.Context, e wire.ApprovalPendingEvent) error {
	a, err := c.describeApproval(ctx, e.Approval)
	if err != nil {
		c.view.activity(fmt.Sprintf("approval %s is pending, but brokerd does not describe it: %v", e.Approval, err))
		return nil
	}
	if c.oneShot != nil {
		c.view.askApproval(a) // describes it
		if preview := c.notesWritePreview(ctx, a); preview != "" {
			c.view.activity(strings.TrimSpace(preview))
		}
		c.pendingApproval(ctx, a)
		return nil
	}
	var approve *bool
	if v, ok := c.view.(*termView); ok {
		switch c.promptApproval(ctx, v, a) {
		case answerElsewhere:
			delete(c.asked, a.Approval)
			return nil
		case answerApprove:
			approve = ptr(true)
		default:
			approve = ptr(false)
		}
	} else {
		approve = c.view.askApproval(a)
	}
	if approve == nil {
		c.view.activity(fmt.Sprintf("approval %s is pending until %s: answer with `boxmaker approve %s` or `boxmaker deny %s`", a.Approval, a.Expires, a.Approval, a.Approval))
		return nil
	}
	res, err := callAdmin(ctx, c.paths, wire.ApprovalAnswer{Approval: a.Approval, Approve: *approve})
	delete(c.asked, a.Approval)
	if err != nil {
		c.view.activity("could not answer the approval: " + err.Error())
		return nil
	}
	if r, ok := res.(wire.ApprovalAnswerResult); ok {
		c.view.activity(answerLine(a.Approval, r.Outcome))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// answerLine says what became of the owner's answer at the prompt. unknown
// means nothing was pending under that id any more: answered from another
// terminal or Mattermost while the prompt was up, or expired.
func answerLine(id string, outcome wire.ApprovalOutcome) string {
	if outcome == wire.OutcomeUnknown {
		return fmt.Sprintf("approval %s was no longer pending: it was answered elsewhere (boxmaker approve, Mattermost) or it expired", id)
	}
	return fmt.Sprintf("approval %s: %s", id, outcome)
}

func (c *chatter) describeApproval(ctx context.Context, id string) (wire.Approval, error) {
	res, err := callAdmin(ctx, c.paths, wire.ApprovalList{})
	if err != nil {
		return wire.Approval{}, err
	}
	list, ok := res.(wire.ApprovalListResult)
	if !ok {
		return wire.Approval{}, errors.New("unexpected answer " + wire.KindOf(res))
	}
	for _, a := range list.Approvals {
		if a.Approval == id {
			return a, nil
		}
	}
	return wire.Approval{}, errors.New("no such pending approval")
}

// callAdmin sends one message on the owner's socket to brokerd.
func callAdmin(ctx context.Context, paths config.Paths, m wire.Message) (wire.Message, error) {
	path, err := sock.PathOf(paths, "bxctl", "brokerd")
	if err != nil {
		return nil, err
	}
	c, err := sock.Dial(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Call(ctx, m, nil)
}

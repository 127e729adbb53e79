package bxctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"boxmaker/wire"
)

// statusAfter is how long a turn may show nothing before the status line
// says what it waits for: long enough that a streaming reply never shows
// it, short enough that a silent wait does not look like a hang.
const statusAfter = 2 * time.Second

// interactiveTurn runs one turn while the owner can interrupt it: loop.sock
// is read on a goroutine of its own, and this one shows its events, watches
// the keys for Ctrl-C and keeps the status line. Everything that writes to
// the terminal or asks the owner runs here, one thing at a time.
func (c *chatter) interactiveTurn(ctx context.Context, v *termView, content string) error {
	if err := checkMessage(content); err != nil {
		return err
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan any) // a wire.Message, or a line to show
	c.relay = func(m any) error {
		select {
		case events <- m:
			return nil
		case <-tctx.Done():
			return tctx.Err()
		}
	}
	defer func() { c.relay = nil }()
	type ending struct {
		final wire.Message
		err   error
	}
	ended := make(chan ending, 1)
	c.startTurn()
	go func() {
		final, err := c.send(tctx, content)
		ended <- ending{final, err}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	quiet := time.Now() // when the turn last showed something
	for {
		select {
		case m := <-events:
			v.clearStatus()
			if line, ok := m.(string); ok {
				v.activity(line)
			} else if err := c.event(tctx, m.(wire.Message)); err != nil {
				cancel()
			}
			quiet = time.Now()
		case k, ok := <-v.keys.chunks:
			if !ok {
				c.interrupt(ctx, v, cancel, func() { <-ended })
				return errTerminalGone
			}
			if i := bytes.IndexAny(k.data, "\x03\x04"); i >= 0 {
				v.keys.keep(typedText(k.data[:i]))
				c.interrupt(ctx, v, cancel, func() { <-ended })
				return nil
			}
			v.keys.keep(k.data) // typed ahead: there at the next prompt
		case <-tick.C:
			if waited := time.Since(quiet); waited >= statusAfter {
				v.status(fmt.Sprintf("waiting for %s, %s (Ctrl-C cancels the turn)", c.waiting, waited.Truncate(time.Second)))
			}
		case e := <-ended:
			v.clearStatus()
			return c.endTurn(ctx, e.final, e.err)
		}
	}
}

// errTerminalGone ends the chat when the terminal's input ended mid-turn.
var errTerminalGone = errors.New("the terminal's input ended")

// interrupt cancels the running turn at the owner's Ctrl-C: the turn's
// pending approvals are refused first, through brokerd, so that each is
// recorded as refused and none is left half answered; then the connection
// to loopd is closed, which ends the turn there (its model request is
// aborted, its connection to brokerd closed, a running sandbox killed).
// wait returns once the turn's goroutine has given up. The chat then
// reconnects for the next message.
func (c *chatter) interrupt(ctx context.Context, v *termView, cancel context.CancelFunc, wait func()) {
	v.clearStatus()
	v.endLine()
	what := []string{}
	switch {
	case strings.HasPrefix(c.waiting, "call "):
		what = append(what, strings.TrimSuffix(c.waiting, " to finish")+" was stopped")
	case c.waiting == "the model":
		what = append(what, "the model's request was aborted")
	}
	for id, call := range c.asked {
		actx, stop := context.WithTimeout(ctx, 5*time.Second)
		res, err := callAdmin(actx, c.paths, wire.ApprovalAnswer{Approval: id, Approve: false})
		stop()
		if r, ok := res.(wire.ApprovalAnswerResult); ok && err == nil && r.Outcome == wire.OutcomeRefused {
			what = append(what, fmt.Sprintf("approval %s (call %d) was refused", id, call))
		}
	}
	c.asked = map[string]wire.CallID{}
	cancel()
	wait()
	c.writeGrantsLeft()
	c.loop.Close()
	if loop, err := dialLoopd(c.paths); err == nil {
		c.loop = loop // else the next message reconnects, saying so
	}
	line := "turn cancelled"
	if len(what) > 0 {
		line += ": " + strings.Join(what, "; ")
	}
	v.activity(line + ". The session keeps the turn up to its last whole step; type a message to go on")
}

package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// reconnectFor bounds how long chat waits for loopd to come back after
// its connection broke: up restarts a role within seconds, and an owner
// who restarts the whole stack does so within this.
const reconnectFor = 30 * time.Second

func dialLoopd(paths config.Paths) (*sock.Client, error) {
	path, err := sock.PathOf(paths, "bxctl", "loopd")
	if err != nil {
		return nil, err
	}
	c, err := sock.Dial(path)
	if err != nil {
		return nil, fmt.Errorf("loopd is not answering at %s (start boxmaker with: boxmaker up --home %s): %w", path, paths.Home, err)
	}
	return c, nil
}

// waitForLoopd dials loopd, trying again for up to wait.
func waitForLoopd(ctx context.Context, paths config.Paths, wait time.Duration) (*sock.Client, error) {
	deadline := time.Now().Add(wait)
	for {
		c, err := dialLoopd(paths)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// send sends one message and returns the turn's final answer, showing its
// events. A connection that broke before any of the turn came back (loopd
// restarted since the last turn) is reconnected and the message sent again:
// loopd names the session before it records anything, so nothing of it was
// kept. A connection that broke later is reconnected for the next message,
// and the turn reported cut, not sent twice.
func (c *chatter) send(ctx context.Context, content string) (wire.Message, error) {
	for again := false; ; again = true {
		heard := false
		final, err := c.loop.Call(ctx, wire.ChatSend{Session: c.session, Content: content}, func(m wire.Message) error {
			heard = true
			if c.relay != nil {
				return c.relay(m)
			}
			return c.event(ctx, m)
		})
		if err == nil || !connectionBroke(err) || ctx.Err() != nil {
			return final, err
		}
		if rerr := c.reconnect(ctx, err); rerr != nil {
			return nil, rerr
		}
		if heard || again {
			return nil, fmt.Errorf("the connection to loopd broke during the turn (%v); the session keeps the turn up to its last whole step: send the message again to go on", err)
		}
	}
}

// reconnect replaces the broken connection to loopd, saying so.
func (c *chatter) reconnect(ctx context.Context, cause error) error {
	c.loop.Close()
	c.say(fmt.Sprintf("the connection to loopd broke (%v); reconnecting for up to %s", cause, reconnectFor))
	loop, err := waitForLoopd(ctx, c.paths, reconnectFor)
	if err != nil {
		return fmt.Errorf("loopd did not come back within %s: %w", reconnectFor, err)
	}
	c.loop = loop
	if c.session != nil {
		c.say("reconnected to loopd; session " + c.session.String() + " goes on")
	} else {
		c.say("reconnected to loopd")
	}
	return nil
}

// say shows a line of the chat's own from the goroutine that runs the
// turn: through the relay when the interactive chat reads the turn there.
func (c *chatter) say(line string) {
	if c.relay != nil {
		_ = c.relay(line) // fails only once the turn is cancelled, when nobody reads it
		return
	}
	c.view.activity(line)
}

// connectionBroke reports whether err says the connection to loopd is
// gone (closed, reset, or cut mid-frame), rather than an answer.
func connectionBroke(err error) bool {
	var we wire.WireError
	if errors.As(err, &we) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

package mcppool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"boxmaker/roles/internal/sandbox"
	"boxmaker/wire"
)

// instance is one running sandbox and the conversation with it: one
// request at a time.
type instance struct {
	key  key
	sb   *sandbox.Instance
	mu   sync.Mutex // held for a whole request
	next uint64
	// live is the tool list as last listed: at the start and after a
	// list_changed notice (stale set until listed again).
	live    wire.McpToolsResult
	stale   atomic.Bool
	dead    atomic.Bool
	finals  chan final // from read to ask; one slot
	lastUse time.Time  // under the pool's mu
	busy    int        // under the pool's mu
}

// errDead is a request to an instance that has ended.
var errDead = errors.New("the MCP instance has ended")

// ask sends m and waits for its final frame; the reader (read) logs the
// notices, which may come at any time. A response that does not come
// within limit ends the instance.
func (in *instance) ask(ctx context.Context, m wire.Message, limit time.Duration, log func(string)) (wire.Message, error) {
	if in.dead.Load() {
		return nil, errDead
	}
	in.next++
	id := in.next
	if err := wire.WriteEnvelope(in.sb.Stdin, wire.Envelope{ID: id, Final: true, Msg: m}); err != nil {
		in.end()
		return nil, fmt.Errorf("%w: %v", errDead, err)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case a := <-in.finals:
		switch {
		case a.err != nil:
			in.end()
			// The diagnostics are the sandbox's stderr: toolkit's own
			// sanitized lines, and bwrap's. They go to the log, never to
			// the model.
			log(fmt.Sprintf("mcp %s (session %s): ended: %v; diagnostics: %q", in.key.server, in.key.session, a.err, tail(in.sb.Diagnostics(), 2048)))
			return nil, fmt.Errorf("%w: %v", errDead, a.err)
		case a.id != id:
			in.end()
			return nil, fmt.Errorf("%w: an answer to request %d, not %d", errDead, a.id, id)
		}
		return a.msg, nil
	case <-timer.C:
		in.end()
		return nil, fmt.Errorf("the MCP server did not answer within %v; its instance was ended", limit)
	case <-ctx.Done():
		in.end()
		return nil, ctx.Err()
	}
}

// final is one answer the reader passes to ask.
type final struct {
	id  uint64
	msg wire.Message
	err error
}

// read takes every frame the instance writes, for its life: notices are
// logged at once (a list change marks the list stale), final frames go to
// the request waiting for them. It ends with the instance's stdout.
func (in *instance) read(log func(string)) {
	for {
		env, err := wire.ReadEnvelope(in.sb.Stdout)
		if err != nil {
			select {
			case in.finals <- final{err: err}:
			default:
			}
			return
		}
		if !env.Final {
			in.notice(env.Msg, log)
			continue
		}
		select {
		case in.finals <- final{id: env.ID, msg: env.Msg}:
		default: // two finals unread: toolkit broke the conversation
			in.end()
			return
		}
	}
}

// notice logs a notification; a list change makes the next call list again.
func (in *instance) notice(m wire.Message, log func(string)) {
	n, ok := m.(wire.McpNotice)
	if !ok {
		return
	}
	if n.Type == wire.McpListChanged {
		in.stale.Store(true)
	}
	// toolkit made Text one line without control characters (the wire
	// checks it again); the server's words stay data.
	log(fmt.Sprintf("mcp %s (session %s): %s %s", in.key.server, in.key.session, n.Type, n.Text))
}

func (in *instance) end() {
	in.dead.Store(true)
	go in.sb.Kill()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

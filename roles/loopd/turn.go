package loopd

import (
	"context"
	"errors"
	"fmt"

	"boxmaker/wire"
)

// turnResult is how a turn ended well.
type turnResult struct {
	session wire.SessionID
	content string
}

// chat runs one turn of a session: the owner's message, then model replies
// and tool calls until the model answers without a call.
func (l *loopd) chat(ctx context.Context, m wire.ChatSend, ev *events, names bool) (turnResult, error) {
	if m.Content == "" {
		return turnResult{}, clientError{"chat_send content is empty"}
	}
	ss, err := l.store.resolve(m.Session, names)
	if err != nil {
		return turnResult{}, err
	}
	if err := ss.acquire(ctx); err != nil {
		return turnResult{}, err
	}
	res, err := l.turnIn(ctx, ss, m, ev)
	l.store.used(ss)
	ss.release()
	l.store.closeIdle()
	return res, err
}

// turnIn runs the turn in ss, whose token the caller holds.
func (l *loopd) turnIn(ctx context.Context, ss *session, m wire.ChatSend, ev *events) (turnResult, error) {
	st, err := l.ready(ctx, ss)
	if err != nil {
		return turnResult{}, err
	}
	// Named once it exists, so that a client may resume it by that name
	// even if this turn fails.
	ev.send(wire.SessionEvent{Session: ss.id})
	if st, err = l.maybeCompact(ctx, ss, st, len(m.Content)); err != nil {
		return turnResult{}, err
	}
	t := &turn{l: l, ss: ss, st: st, ev: ev}
	defer t.closeBroker()
	content, err := t.run(ctx, m.Content)
	if err != nil && t.dirty {
		ss.drop()
	}
	return turnResult{session: ss.id, content: content}, err
}

// turn is one chat_send being answered. Records of a step wait in pending
// until the step's reply is whole; the log never holds part of a reply.
type turn struct {
	l       *loopd
	ss      *session
	st      *epochState
	ev      *events
	pending []wire.LogRecord
	broker  *brokerConn
	// dirty says the log and memory may disagree (an assistant's calls are
	// written but not all their results, or a write failed), so a failed
	// turn makes the session rebuild from its log.
	dirty bool
}

func (t *turn) run(ctx context.Context, content string) (string, error) {
	t.pending = []wire.LogRecord{wire.User{Time: t.l.now(), Content: content}}
	for range t.l.cfg.MaxSteps {
		a, err := t.ask(ctx)
		if err != nil {
			return "", err
		}
		if err := t.write(append(t.pending, a)...); err != nil {
			return "", err
		}
		t.pending, t.st.since = nil, 0 // the reply's timings count all of it
		if len(a.ToolCalls) == 0 {
			return *a.Content, nil
		}
		t.dirty = true
		for _, c := range a.ToolCalls {
			if err := t.call(ctx, c); err != nil {
				return "", err
			}
		}
		t.dirty = false
	}
	return "", fmt.Errorf("the model asked for tools %d times in this turn without answering; stopped (loop.max_steps)", t.l.cfg.MaxSteps)
}

func (t *turn) write(recs ...wire.LogRecord) error {
	if err := t.l.write(t.ss, t.st, recs...); err != nil {
		t.dirty = true
		return fmt.Errorf("session log: %w", err)
	}
	return nil
}

// ask sends the epoch and the step's pending records to the model and
// returns its reply, forwarding text as it streams.
func (t *turn) ask(ctx context.Context) (wire.Assistant, error) {
	req, err := t.l.request(ctx, t.st, t.pending...)
	if err != nil {
		return wire.Assistant{}, err
	}
	body, err := encodeRequest(req)
	if err != nil {
		return wire.Assistant{}, err
	}
	r, err := t.l.complete(ctx, body, func(reasoning bool, text string) {
		if reasoning {
			t.ev.send(wire.Reasoning{Text: text})
		} else {
			t.ev.send(wire.Delta{Text: text})
		}
	})
	if err != nil {
		return wire.Assistant{}, err
	}
	a, err := r.assistant(t.l.now())
	if err != nil {
		return a, err
	}
	t.pending = append(t.pending, t.l.checkCache(t.st, r.timings)...)
	return a, nil
}

// request is the epoch replayed, with more records after it, its text
// cleared of the server's turn markers.
func (l *loopd) request(ctx context.Context, st *epochState, more ...wire.LogRecord) (chatRequest, error) {
	props, err := l.infer.serverProps(ctx)
	if err != nil {
		return chatRequest{}, err
	}
	recs := append(st.records[:len(st.records):len(st.records)], more...)
	return chatRequest{
		Messages: messages(st.prompt, props.Markers, recs), Tools: tools(st.prompt.Tools),
		Stream: true, CachePrompt: true, IDSlot: int64(chatSlot(st.slot, props.Slots, l.inspect)),
	}, nil
}

// complete runs one model request to the end of its stream.
func (l *loopd) complete(ctx context.Context, body []byte, text onText) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout.D())
	defer cancel()
	stream, err := l.infer.chat(ctx, body)
	if err == nil {
		defer stream.Close()
		var r *reply
		if r, err = readStream(stream, text); err == nil {
			return r, nil
		}
	}
	var ue *upstreamError
	if errors.As(err, &ue) {
		l.infer.forget() // a restarted server may have other slots or context
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("the model did not finish within loop.request_timeout (%s)", l.cfg.RequestTimeout.D())
	}
	return nil, err
}

// checkCache compares the prompt tokens the server reused with what an
// unchanged prefix should have given: the whole previous prompt of this
// epoch, but never the last token, which the server always evaluates again.
// It returns a CacheLoss record when the server reused fewer.
func (l *loopd) checkCache(st *epochState, tm *timings) []wire.LogRecord {
	if tm == nil {
		return nil
	}
	var out []wire.LogRecord
	total := tm.prompt()
	if st.lastPrompt > 0 && total > 0 {
		if expected := min(st.lastPrompt, total-1); tm.CacheN < expected {
			out = append(out, wire.CacheLoss{Time: l.now(), Expected: expected, Got: tm.CacheN})
			l.log.Printf("cache loss on slot %d: reused %d prompt tokens, expected %d", st.slot, tm.CacheN, expected)
		}
	}
	st.lastPrompt, st.context = total, total+tm.PredictedN
	return out
}

package loopd

import (
	"context"
	"errors"
	"fmt"

	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// kindsFor answers requests from client's socket, one row per kind (the
// role table says which of them each socket lets through). Only a pair
// the table marks NamesSessions (gatewayd's: one per thread) starts a
// session under a name of its own; through the owner's socket a name
// resumes a session that exists, so that a mistyped --session is an error
// rather than a new, empty session.
func (l *loopd) kindsFor(client string) sock.Kinds {
	pair, _ := roles.PairOf(client, "loopd")
	names := pair.NamesSessions
	return sock.Kinds{
		"chat_send": func(ctx context.Context, _ sock.Peer, req wire.Envelope, reply sock.Replier) error {
			return l.chatSend(ctx, req.Msg.(wire.ChatSend), reply, names)
		},
		"session_list": func(_ context.Context, _ sock.Peer, _ wire.Envelope, reply sock.Replier) error {
			return reply(wire.Envelope{Final: true, Msg: wire.SessionListResult{Sessions: l.store.list()}})
		},
		"session_log": func(_ context.Context, _ sock.Peer, req wire.Envelope, reply sock.Replier) error {
			return l.sessionLog(req.Msg.(wire.SessionLog), reply)
		},
		"job_run": func(_ context.Context, _ sock.Peer, req wire.Envelope, reply sock.Replier) error {
			return reply(wire.Envelope{Final: true, Msg: l.sched.runNow(req.Msg.(wire.JobRunNow).Job)})
		},
		"job_deliveries": func(ctx context.Context, _ sock.Peer, _ wire.Envelope, reply sock.Replier) error {
			return l.deliveries.serve(ctx, reply)
		},
	}
}

// chatSend runs one turn. Its events stream as they happen; a turn that
// fails ends with an error frame whose detail says why, and the connection
// stays open for the next message.
func (l *loopd) chatSend(ctx context.Context, m wire.ChatSend, reply sock.Replier, names bool) error {
	ev := &events{reply: reply}
	if err := l.refuseJobSession(m); err != nil {
		return ev.fail(err)
	}
	res, err := l.chat(ctx, m, ev, names)
	switch {
	case err != nil && errors.Is(context.Cause(ctx), sock.ErrPeerGone):
		// The client left mid-turn: nobody would read the rest, and its
		// calls' pending approvals are withdrawn with this connection.
		err = errors.New("the client hung up; the turn was interrupted and is recorded up to its last whole step")
	case err != nil && ctx.Err() != nil:
		err = errors.New("loopd is stopping; the turn was interrupted and is recorded up to its last whole step")
	}
	if err != nil {
		l.log.Printf("chat turn failed: %v", err)
		return ev.fail(err)
	}
	return ev.final(wire.ChatDone{Session: res.session, Content: res.content})
}

// sessionLog answers with the session's current epoch as stored. It reads
// the file rather than the running turn's memory, so it never waits for a
// turn; a step still being written is left out, as a restart would cut it.
func (l *loopd) sessionLog(m wire.SessionLog, reply sock.Replier) error {
	ss, epoch, ok, err := l.store.lookup(m.Session)
	if err != nil {
		return replyError(reply, wire.Internal, err.Error())
	}
	if !ok {
		return replyError(reply, wire.BadMessage, noSession(m.Session).Error())
	}
	r, err := readEpoch(epochFile(ss.dir, epoch))
	if err != nil {
		return replyError(reply, wire.Internal, fmt.Sprintf("session %s: %v", m.Session, err))
	}
	recs := r.records[:wholeSteps(r.records)]
	res := wire.Envelope{Final: true, Msg: wire.SessionLogResult{Session: m.Session, Epoch: epoch, Records: recs}}
	if b, err := wire.Encode(res); err != nil || len(b) > wire.MaxFrame {
		return replyError(reply, wire.Internal, fmt.Sprintf("session %s epoch %d is too large for one frame; read %s", m.Session, epoch, epochFile(ss.dir, epoch)))
	}
	return reply(res)
}

func replyError(reply sock.Replier, code wire.ErrorCode, detail string) error {
	return reply(wire.Envelope{Final: true, Msg: wire.WireError{Code: code, Detail: detail}})
}

// events sends a turn's chat_event frames. A client that went away does
// not stop the turn: it runs to its end so that the log and brokerd agree,
// and its frames are dropped.
type events struct {
	reply sock.Replier
	gone  bool
}

func (e *events) send(ev wire.ChatEvent) {
	if e.gone {
		return
	}
	if err := e.reply(wire.Envelope{Final: false, Msg: ev}); err != nil {
		e.gone = true
	}
}

func (e *events) final(m wire.Message) error {
	if e.gone {
		return errors.New("the client left before the turn ended")
	}
	return e.reply(wire.Envelope{Final: true, Msg: m})
}

// fail ends the turn with an error frame: bad_message for a request loopd
// will not carry out, internal for everything that failed on the way.
func (e *events) fail(err error) error {
	code := wire.Internal
	var ce clientError
	if errors.As(err, &ce) {
		code = wire.BadMessage
	}
	return e.final(wire.WireError{Code: code, Detail: err.Error()})
}

package brokerd

import (
	"context"

	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// What each of brokerd's sockets answers, one row per kind (sock.Kinds):
// the role table says which kinds each socket lets through, and serve
// refuses to start if one of them has no row here.

// toolKinds answer loopd's socket.
func (b *broker) toolKinds() sock.Kinds {
	return sock.Kinds{
		"tool_request": b.row(func(ctx context.Context, _ sock.Peer, m wire.Message, reply replyFunc) error {
			return b.toolRequest(ctx, m.(wire.ToolRequest), reply)
		}),
		"tool_list": oneAnswer(func(m wire.ToolList, _ sock.Peer) (wire.ToolListResult, error) { return b.toolList(m.Session) }),
		"job_start": oneAnswer(func(m wire.JobStart, _ sock.Peer) (wire.Message, error) { return b.jobStart(m) }),
		"job_done":  oneAnswer(func(m wire.JobDone, _ sock.Peer) (wire.Message, error) { return b.jobDone(m) }),
		"job_list":  oneAnswer(func(wire.JobList, sock.Peer) (wire.JobListResult, error) { return b.jobList() }),
	}
}

// adminKinds answer the owner's socket; the owner is named from the peer.
func (b *broker) adminKinds() sock.Kinds {
	return sock.Kinds{
		"approval_list": oneAnswer(func(wire.ApprovalList, sock.Peer) (wire.ApprovalListResult, error) {
			return wire.ApprovalListResult{Approvals: b.approvals.list()}, nil
		}),
		"approval_answer": oneAnswer(func(m wire.ApprovalAnswer, p sock.Peer) (wire.ApprovalAnswerResult, error) {
			return b.answerApproval(m, approver(p)), nil
		}),
		"session_state": oneAnswer(func(m wire.SessionState, _ sock.Peer) (wire.SessionStateResult, error) {
			return b.sessionState(m.Session)
		}),
		"handle_show": oneAnswer(func(m wire.HandleShow, _ sock.Peer) (wire.HandleShowResult, error) { return b.handleShow(m) }),
		"notes_list": b.row(func(_ context.Context, _ sock.Peer, _ wire.Message, reply replyFunc) error {
			return b.notesList(reply)
		}),
		"notes_show":    oneAnswer(func(m wire.NotesShow, _ sock.Peer) (wire.Message, error) { return b.notesShow(m), nil }),
		"notes_endorse": oneAnswer(func(m wire.NotesEndorse, p sock.Peer) (wire.Message, error) { return b.notesEndorse(m, approver(p)) }),
		"job_list":      oneAnswer(func(wire.JobList, sock.Peer) (wire.JobListResult, error) { return b.jobList() }),
		"job_show":      oneAnswer(func(m wire.JobShow, _ sock.Peer) (wire.Message, error) { return b.jobShow(m) }),
		"job_run":       oneAnswer(func(m wire.JobRunNow, p sock.Peer) (wire.Message, error) { return b.jobTrigger(m, approver(p)) }),
	}
}

// approver names the owner behind p, for approvals and the audit records
// of what they trigger.
func approver(p sock.Peer) string { return "local:" + roles.UserName(p.UID) }

// row is a handler that answers with brokerd's replyFunc.
func (b *broker) row(h func(ctx context.Context, p sock.Peer, m wire.Message, reply replyFunc) error) sock.Handler {
	return func(ctx context.Context, p sock.Peer, e wire.Envelope, reply sock.Replier) error {
		return h(ctx, p, e.Msg, func(final bool, m wire.Message) error {
			return reply(wire.Envelope{Final: final, Msg: m})
		})
	}
}

// oneAnswer is a row that answers its request of type T with one final frame.
// The gate let only T through under this row's kind.
func oneAnswer[T wire.Message, R wire.Message](f func(T, sock.Peer) (R, error)) sock.Handler {
	return func(_ context.Context, p sock.Peer, e wire.Envelope, reply sock.Replier) error {
		res, err := f(e.Msg.(T), p)
		if err != nil {
			return err
		}
		return reply(wire.Envelope{Final: true, Msg: res})
	}
}

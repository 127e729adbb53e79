package brokerd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/handles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// inputLabel is the join of the labels of the handles d's call referred to.
func inputLabel(d policy.Decision) taintLabel {
	class, untrusted := d.InputLabel()
	return taintLabel{class: class, untrusted: untrusted}
}

// withheldFailure stands for the reason a call that referred to handles
// did not run: that reason may quote its arguments (a note's path, a
// mount), which held the handles' content, and a call that did not run
// raises nothing, so the model would read the content with the session
// clean. The reason is not logged either: it may be a secret.
func withheldFailure(req request, d policy.Decision, lg *log.Logger) outcome {
	lg.Printf("session %s call %d: %s did not run; the reason is withheld, it may quote %s", req.session, req.id, d.Call().Name(), strings.Join(d.Handles(), ", "))
	return failedOutcome("%s: not run; the reason is not shown, as it may quote the content of %s", d.Call().Name(), strings.Join(d.Handles(), ", "))
}

// keepHandle stores a result under a grant with result = "handle" and
// answers only its reference (DESIGN.md section 15), labelled with the
// session as it is: the session's taint and untrusted flag do not change.
// The handle keeps the label the result would have had, and its content
// is redacted and cut like any result.
func (b *broker) keepHandle(req request, g policy.Grant, out outcome, reply replyFunc) error {
	res := label(out.output.Content, g, out.read, out.secrets, b.cfg.Broker.ResultMaxBytes)
	ref, err := b.handles.Put(req.session, req.call.Name(), res.Class, res.Untrusted, res.Content)
	if errors.Is(err, handles.ErrLimit) {
		b.log.Printf("session %s call %d: %v", req.session, req.id, err)
		return reply(true, wire.Failed{Message: fmt.Sprintf("%s: the result was not kept: %v", req.call.Name(), err)})
	}
	if err != nil {
		return err
	}
	st, err := b.sessions.Get(req.session)
	if err != nil {
		return err
	}
	content, err := wire.Marshal(&ref)
	if err != nil {
		return err
	}
	return reply(true, wire.Result{Content: string(content), Class: st.Taint(), Untrusted: st.Untrusted()})
}

// inspect answers an allowed inspect call: one more question of each
// handle it reads (the question may be a handle's content too) and of
// each content they hold, and, when the answer is declassified, its bits
// of the session's budget (budget.go), all counted before it is asked of
// the quarantined model, and only
// an answer of the asked type comes back. The answer is trusted (a typed
// value carries no instructions); its class is that of what the question
// read, unless the grant says declassify = true, when its result_class
// stands. An answer outside its type fails without being quoted.
func (b *broker) inspect(ctx context.Context, req request, d policy.Decision, g policy.Grant, reply replyFunc) error {
	args, ok := d.Input().Args().(wire.InspectArgs)
	if !ok {
		return fmt.Errorf("inspect: arguments of type %T", d.Input().Args())
	}
	read := inputLabel(d).class
	var declassified uint64
	if g.Declassify() && g.ResultClass() < read {
		declassified = handles.AnswerBits(args.Answer)
	}
	h, err := b.handles.Ask(req.session, args.Handle, d.Handles(), declassified, b.cfg.Inspect)
	if errors.Is(err, handles.ErrLimit) {
		return reply(true, wire.Failed{Message: "inspect: " + err.Error()})
	}
	if err != nil {
		return err
	}
	text, err := b.askQuarantined(ctx, wire.InspectRequest{Question: args.Question, Data: h.Content, Answer: args.Answer})
	if err != nil {
		b.log.Printf("session %s call %d: inspect: %v", req.session, req.id, err)
		return reply(true, wire.Failed{Message: "inspect: the quarantined model did not answer; try again later"})
	}
	answer, err := args.Answer.Parse(text)
	if err != nil {
		b.log.Printf("session %s call %d: inspect %s: %v", req.session, req.id, args.Handle, err)
		return reply(true, wire.Failed{Message: "inspect: " + err.Error() + " (it is not shown)"})
	}
	class := read
	if g.Declassify() {
		class = g.ResultClass()
	}
	if err := b.sessions.Raise(req.session, class, false); err != nil {
		return err
	}
	return reply(true, wire.Result{Content: answer, Class: class, Untrusted: false})
}

// askQuarantined sends q to inspectd, which carries nothing of loopd's,
// and returns the model's answer, unchecked.
func (b *broker) askQuarantined(ctx context.Context, q wire.InspectRequest) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Inspect.Timeout.D())
	defer cancel()
	c, err := sock.Dial(b.dial.inspect)
	if err != nil {
		return "", err
	}
	defer c.Close()
	m, err := c.Call(ctx, q, nil)
	if err != nil {
		return "", err
	}
	res, ok := m.(wire.InspectResult)
	if !ok {
		return "", fmt.Errorf("inspectd answered %s", wire.KindOf(m))
	}
	return res.Answer, nil
}

// handleShow is one of a session's handles with its content, for the
// owner; Ref is null when the session has no such handle.
func (b *broker) handleShow(q wire.HandleShow) (wire.HandleShowResult, error) {
	h, ok, err := b.handles.Get(q.Session, q.Handle)
	if err != nil || !ok {
		return wire.HandleShowResult{Session: q.Session}, err
	}
	ref := h.Ref(q.Handle)
	return wire.HandleShowResult{Session: q.Session, Ref: &ref, Content: h.Content}, nil
}

package brokerd

import (
	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/wire"
)

// The call path's side of the notes' provenance (roles/brokerd/internal/notes
// keeps the labels): who a call writes as, and what its reads raise.

// noteWriter describes the call req, run under g with in, the labels of
// the handles it was given, to the labels.
func (b *broker) noteWriter(req request, g policy.Grant, in taintLabel) notes.Writer {
	return notes.Writer{Session: req.session, Call: req.id, Base: func() (notes.Label, error) {
		st, err := b.sessions.get(req.session)
		if err != nil {
			return notes.Label{}, err
		}
		l := taintLabel{class: max(st.Taint(), g.ResultClass()), untrusted: st.Untrusted() || g.Untrusted()}.join(in)
		return notes.Label{Class: l.class, Untrusted: l.untrusted}, nil
	}}
}

// labelOfNotes is a label of the notes as the call path joins labels.
func labelOfNotes(l notes.Label) taintLabel {
	return taintLabel{class: l.Class, untrusted: l.Untrusted}
}

// applyResultRead is applyResult for a call whose sandbox could read
// labelled notes: the session also takes on read, the join of their labels,
// so that reading a note launders neither taint nor trust.
//
// WARNING: like applyResult, call it before the result is sent; the stored
// state must never be lower than what the model has seen.
// TestASecretNoteTaintsItsReader proves a reader of a labelled note is
// raised by the time its next call is decided.
func (s *sessions) applyResultRead(id wire.SessionID, g policy.Grant, read taintLabel) error {
	return s.update(id, func(st policy.Session) (policy.Session, error) {
		if err := st.ApplyResult(g); err != nil {
			return st, err
		}
		return policy.RestoreSession(max(st.Taint(), read.class), st.Untrusted() || read.untrusted)
	})
}

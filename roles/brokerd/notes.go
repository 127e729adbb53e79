package brokerd

import (
	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/notes"
)

// The call path's side of the notes' provenance (roles/brokerd/internal/notes
// keeps the labels): who a call writes as, and what its reads raise.

// noteWriter describes the call req, run under g with in, the labels of
// the handles it was given, to the labels.
func (b *broker) noteWriter(req request, g policy.Grant, in taintLabel) notes.Writer {
	return notes.Writer{Session: req.session, Call: req.id, Base: func() (notes.Label, error) {
		st, err := b.sessions.Get(req.session)
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

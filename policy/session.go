package policy

import (
	"errors"
	"fmt"

	"boxmaker/wire"
)

// Session is what brokerd knows about a session from the results it has
// returned: its taint (starts private, never falls) and whether anything
// untrusted may have steered it (starts false, never clears). The only
// change is ApplyResult; nothing loopd says sets it. The zero Session is a
// new one.
type Session struct {
	taint     wire.DataClass
	untrusted bool
}

// NewSession returns the state of a session that has seen no result.
func NewSession() Session { return Session{taint: wire.Private} }

// RestoreSession rebuilds a stored Session. The taint must be private or
// secret: a session starts at private and never falls, so anything lower
// was not written by brokerd.
func RestoreSession(taint wire.DataClass, untrusted bool) (Session, error) {
	if taint != wire.Private && taint != wire.Secret {
		return Session{}, fmt.Errorf("policy: stored session taint %v must be private or secret", taint)
	}
	return Session{taint: taint, untrusted: untrusted}, nil
}

// Taint is the session's taint; the zero Session is at private.
func (s Session) Taint() wire.DataClass { return max(s.taint, wire.Private) }

// Untrusted reports whether a result from an untrusted grant has reached
// the session.
func (s Session) Untrusted() bool { return s.untrusted }

// ApplyResult records that a result returned under g reached the session:
// taint = max(taint, g's result_class), untrusted |= g's untrusted.
func (s *Session) ApplyResult(g Grant) error {
	if g.IsZero() {
		return errors.New("policy: a result needs the grant it ran under, not the zero Grant")
	}
	s.taint = s.Taint().Max(g.resultClass)
	s.untrusted = s.untrusted || g.untrusted
	return nil
}

// sessionJSON is the stored form: {"taint":"private","untrusted":false}.
type sessionJSON struct {
	Taint     wire.DataClass `json:"taint"`
	Untrusted bool           `json:"untrusted"`
}

// MarshalJSON writes {"taint":...,"untrusted":...} for brokerd to persist,
// with the wire's canonical encoder.
func (s Session) MarshalJSON() ([]byte, error) {
	return wire.Marshal(&sessionJSON{Taint: s.Taint(), Untrusted: s.untrusted})
}

// ParseSession reads what MarshalJSON wrote, with the wire's strictness:
// exactly the two members, once each, and nothing after the object. It is a
// function, not UnmarshalJSON, so that no method can overwrite (and lower)
// a live Session.
func ParseSession(data []byte) (Session, error) {
	var v sessionJSON
	if err := wire.Unmarshal(data, &v); err != nil {
		return Session{}, fmt.Errorf("policy: stored session: %w", err)
	}
	return RestoreSession(v.Taint, v.Untrusted)
}

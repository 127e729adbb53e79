package policy

import "boxmaker/wire"

// subject is a call's constrained argument (its ToolArgs.Subject), parsed
// at most once however many grants read it: a decision over a hundred
// fetch grants parses the URL once.
type subject struct {
	raw string

	urlParsed bool
	url       URLTarget
	urlErr    error

	pathParsed bool
	names      []string
	pathErr    error
}

func newSubject(raw string) *subject { return &subject{raw: raw} }

func (s *subject) target() (URLTarget, error) {
	if !s.urlParsed {
		s.url, s.urlErr = ParseURLTarget(s.raw)
		s.urlParsed = true
	}
	return s.url, s.urlErr
}

// components parses the path for dim; a tool has one dimension, so one
// parse serves every grant.
func (s *subject) components(dim wire.Dimension) ([]string, error) {
	if !s.pathParsed {
		s.names, s.pathErr = pathComponents(dim, s.raw)
		s.pathParsed = true
	}
	return s.names, s.pathErr
}

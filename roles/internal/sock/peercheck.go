package sock

// The one hook by which a role's tests admit a peer the role table does
// not name (the test's own uid): every role's Options has an AllowPeer,
// and hands it to its gate through these. nil keeps the table's check.

// ReplacePeerCheck replaces s's peer check with allow, when allow is set.
func (s *Server) ReplacePeerCheck(allow func(Peer) bool) {
	if allow != nil {
		s.AllowPeer = allow
	}
}

// ReplacePeerCheck replaces l's peer check with allow, when allow is set.
func (l *Listener) ReplacePeerCheck(allow func(Peer) bool) {
	if allow != nil {
		l.AllowPeer = allow
	}
}

package loopd

import "container/list"

// DefaultOpenSessions is how many sessions loopd keeps open (epoch file,
// prompt and records in memory) when Options.OpenSessions is zero. A
// session past the bound is closed when idle and rebuilt from its log on
// its next turn, exactly as after a restart, so the bound trades a re-read
// of one epoch file for a descriptor and an epoch's memory per session.
const DefaultOpenSessions = 32

// openSessions keeps the sessions whose epoch is open, most recently used
// at the front. Guarded by store.mu.
type openSessions struct {
	max int
	lru list.List // of *session
}

// used records that ss's turn ended: its epoch is open (at the front of
// the list) or closed (off it). The caller holds ss's turn token, which
// guards ss.state.
func (s *store) used(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case ss.state != nil && ss.open != nil:
		s.open.lru.MoveToFront(ss.open)
	case ss.state != nil:
		ss.open = s.open.lru.PushFront(ss)
	case ss.open != nil:
		s.open.lru.Remove(ss.open)
		ss.open = nil
	}
}

// closeIdle closes the least recently used sessions past the bound. A
// session in a turn holds its token and is never closed: it is skipped,
// and the next turn to end tries again.
func (s *store) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.open.lru.Back(); e != nil && s.open.lru.Len() > s.open.max; {
		ss, prev := e.Value.(*session), e.Prev()
		if ss.tryAcquire() {
			ss.drop()
			s.open.lru.Remove(e)
			ss.open = nil
			ss.release()
		}
		e = prev
	}
}

// tryAcquire takes the session's turn token if no turn holds it.
func (ss *session) tryAcquire() bool {
	select {
	case ss.turn <- struct{}{}:
		return true
	default:
		return false
	}
}

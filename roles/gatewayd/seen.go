package gatewayd

import "sync"

// seenSet remembers the most recent keys, up to a bound, so that a post or
// reaction that arrives twice (a replay after a resume, then a backfill) is
// handled once, and memory does not grow with uptime.
type seenSet struct {
	mu    sync.Mutex
	keys  map[string]struct{}
	order []string // a ring of the keys, oldest at next
	next  int
}

func newSeenSet(bound int) *seenSet {
	return &seenSet{keys: make(map[string]struct{}, bound), order: make([]string, bound)}
}

// Add records key and reports whether it was new.
func (s *seenSet) Add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[key]; ok {
		return false
	}
	if old := s.order[s.next]; old != "" {
		delete(s.keys, old)
	}
	s.order[s.next] = key
	s.next = (s.next + 1) % len(s.order)
	s.keys[key] = struct{}{}
	return true
}

// Remove forgets key and reports whether it was there.
func (s *seenSet) Remove(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	delete(s.keys, key)
	return ok
}

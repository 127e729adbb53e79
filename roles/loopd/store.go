package loopd

import (
	"cmp"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// store is every session under sessions/, known from a scan at start and
// kept current as turns run.
type store struct {
	dir   string
	log   *log.Logger
	clock func() time.Time

	mu   sync.Mutex
	byID map[string]*session
	open openSessions
}

// session is one conversation. Its turn token is held by the one turn that
// runs in it, which alone touches state.
type session struct {
	id   wire.SessionID
	dir  string
	turn chan struct{} // capacity 1: holding it is running a turn

	// Guarded by store.mu.
	info    wire.SessionInfo // Epoch 0: not created yet
	slot    uint32
	slotted bool          // slot is the session's, or reserved for its creation
	damaged error         // the log could not be read; the session is not resumed
	open    *list.Element // in store.open while state is open, else nil

	state *epochState // nil until its first turn since loopd started or closed it idle
}

func openStore(dir string, logger *log.Logger, clock func() time.Time, maxOpen int) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &store{dir: dir, log: logger, clock: clock, byID: map[string]*session{}, open: openSessions{max: maxOpen}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		id, err := wire.ParseSessionID(e.Name())
		if !e.IsDir() || err != nil {
			continue
		}
		s.index(id)
	}
	return s, nil
}

// index reads one session's files for the list and the slot counts. A
// directory without an epoch file is a creation a crash cut short: it is
// left for a chat_send under that name to reuse.
func (s *store) index(id wire.SessionID) {
	ss := s.entry(id)
	sc, err := scanSession(ss.dir, id)
	if errors.Is(err, errNoEpoch) {
		return
	}
	if err != nil {
		s.log.Printf("session %s is not resumed: %v", id, err)
		ss.damaged = err
		return
	}
	ss.info = sc.info()
	ss.slot, ss.slotted = sc.start.Slot, true
}

// entry returns the session named id, making an empty entry if needed.
func (s *store) entry(id wire.SessionID) *session {
	if ss, ok := s.byID[id.String()]; ok {
		return ss
	}
	ss := &session{id: id, dir: filepath.Join(s.dir, id.String()), turn: make(chan struct{}, 1)}
	s.byID[id.String()] = ss
	return ss
}

// resolve finds the session a chat_send names, or a fresh name for null. A
// name no session has yet is started only when names allows it.
func (s *store) resolve(name *wire.SessionID, names bool) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != nil {
		ss, known := s.byID[name.String()]
		switch {
		case known && ss.damaged != nil:
			return nil, clientError{fmt.Sprintf("session %s is not resumed: its log is damaged: %v", name, ss.damaged)}
		case !names && (!known || ss.info.Epoch == 0):
			return nil, noSession(*name)
		}
		return s.entry(*name), nil
	}
	for {
		id, err := s.newID()
		if err != nil {
			return nil, err
		}
		if _, taken := s.byID[id.String()]; !taken {
			return s.entry(id), nil
		}
	}
}

// newID names a session chat-YYYYMMDD-HHMMSS-xxxx (UTC, four random hex
// digits), so that names sort by when they began.
func (s *store) newID() (wire.SessionID, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return wire.SessionID{}, err
	}
	return wire.ParseSessionID("chat-" + s.clock().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]))
}

// chooseSlot gives a new session the slot that the fewest other sessions
// hold (the lowest on a tie), so that sessions share slots evenly, never
// inspect's own. The choice is reserved at once, so that sessions created
// side by side spread too.
func (s *store) chooseSlot(ss *session, slots uint32, inspect config.Inspect) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	count := make([]int, slots)
	for _, other := range s.byID {
		if other != ss && other.slotted && other.slot < slots {
			count[other.slot]++
		}
	}
	if reserved, ok := inspect.ReservedSlot(int(slots)); ok {
		count[reserved] = math.MaxInt
	}
	ss.slot, ss.slotted = uint32(slices.Index(count, slices.Min(count))), true
	return ss.slot
}

// chatSlot is the slot a session's requests name: its own, unless the
// server has fewer slots now (it would wrap the id) or its slot is
// inspect's, which inferproxy refuses (a session begun before the slot
// was kept apart, or under another [inspect] slot); then another, at the
// cost of that slot's cache.
func chatSlot(slot, slots uint32, inspect config.Inspect) uint32 {
	slot %= max(slots, 1)
	if reserved, ok := inspect.ReservedSlot(int(slots)); ok && int(slot) == reserved {
		slot = (slot + 1) % slots
	}
	return slot
}

// update records what a turn changed, for session_list.
func (s *store) update(ss *session, f func(*wire.SessionInfo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&ss.info)
}

// list is every created session, most recently active first.
func (s *store) list() []wire.SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []wire.SessionInfo{}
	for _, ss := range s.byID {
		if ss.info.Epoch > 0 {
			out = append(out, ss.info)
		}
	}
	slices.SortFunc(out, func(a, b wire.SessionInfo) int {
		return cmp.Or(cmp.Compare(b.Updated, a.Updated), cmp.Compare(a.Session.String(), b.Session.String()))
	})
	return out
}

// lookup returns a created session and its current epoch; ok is false
// for a name no session has.
func (s *store) lookup(id wire.SessionID) (ss *session, epoch wire.Epoch, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, found := s.byID[id.String()]
	switch {
	case found && ss.damaged != nil:
		return nil, 0, false, fmt.Errorf("session %s's log is damaged: %v", id, ss.damaged)
	case !found || ss.info.Epoch == 0:
		return nil, 0, false, nil
	}
	return ss, ss.info.Epoch, true, nil
}

// acquire takes the session's turn token, waiting for a running turn to end.
func (ss *session) acquire(ctx context.Context) error {
	select {
	case ss.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ss *session) release() { <-ss.turn }

// closeAll closes every open epoch file, once no turn runs.
func (s *store) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.byID {
		if ss.state != nil {
			ss.state.log.close()
			ss.state = nil
		}
	}
}

// noSession answers a name no session has, saying where the names are.
func noSession(id wire.SessionID) clientError {
	return clientError{fmt.Sprintf("no session named %s (`boxmaker sessions` lists them)", id)}
}

// clientError is a request loopd will not carry out as asked; it is
// answered bad_message, where loopd's own failures are internal.
type clientError struct{ msg string }

func (e clientError) Error() string { return e.msg }

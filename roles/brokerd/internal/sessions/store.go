package sessions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"boxmaker/policy"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/wire"
)

// Store keeps each session's policy.Session in memory and on disk, one
// file per session under broker/sessions/, so that a restart keeps taint.
// Each session has its own lock, so that one session's fsyncs never hold up
// another's calls; mu guards only the map.
type Store struct {
	dir   string
	write func(path string, data []byte) error // writeDurably; tests watch it
	mu    sync.Mutex
	m     map[wire.SessionID]*session
}

// session is one session's state. Its lock is held while the state is read
// from disk and while a change is made durable, so that a change never
// reads a state older than the last one stored.
type session struct {
	mu     sync.Mutex
	loaded bool
	st     policy.Session // never above what is on disk
}

// Open opens the store kept in dir, making dir when it does not exist.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Store{dir: dir, write: writeDurably, m: map[wire.SessionID]*session{}}, nil
}

// of returns the session named id, made empty (not yet loaded) if new.
func (s *Store) of(id wire.SessionID) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[id]
	if e == nil {
		e = &session{}
		s.m[id] = e
	}
	return e
}

// Get returns the session's state: stored, or new. A stored file that does
// not parse is an error, never a fresh (lower) state.
func (s *Store) Get(id wire.SessionID) (policy.Session, error) {
	e := s.of(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.load(id, e)
}

// load reads e from its file once, with e.mu held. No file is a new
// session; brokerd is the only writer of the directory, so that answer
// stays true until update writes one.
func (s *Store) load(id wire.SessionID, e *session) (policy.Session, error) {
	if e.loaded {
		return e.st, nil
	}
	data, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		e.st, e.loaded = policy.NewSession(), true
		return e.st, nil
	}
	if err != nil {
		return policy.Session{}, err
	}
	st, err := policy.ParseSession(data)
	if err != nil {
		return policy.Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	e.st, e.loaded = st, true
	return st, nil
}

// ApplyResult records that a result under g is about to reach the session,
// on disk before it returns.
//
// WARNING: call it before the result is sent. If the file were written after,
// a crash between the two would let the model see a secret result while the
// stored taint stayed lower. TestSecretTaintBlocksPrivateGrantAcrossRestart
// proves the stored taint is what a later call, and a restarted brokerd, go by.
func (s *Store) ApplyResult(id wire.SessionID, g policy.Grant) error {
	return s.update(id, func(st policy.Session) (policy.Session, error) {
		err := st.ApplyResult(g)
		return st, err
	})
}

// ApplyResultRead is ApplyResult for a call whose sandbox could read
// labelled notes: the session also takes on class and untrusted, the join
// of their labels, so that reading a note launders neither taint nor trust.
//
// WARNING: like ApplyResult, call it before the result is sent; the stored
// state must never be lower than what the model has seen.
// TestASecretNoteTaintsItsReader proves a reader of a labelled note is
// raised by the time its next call is decided.
func (s *Store) ApplyResultRead(id wire.SessionID, g policy.Grant, class wire.DataClass, untrusted bool) error {
	return s.update(id, func(st policy.Session) (policy.Session, error) {
		if err := st.ApplyResult(g); err != nil {
			return st, err
		}
		return policy.RestoreSession(max(st.Taint(), class), st.Untrusted() || untrusted)
	})
}

// Raise records that a result of class, untrusted or not, reached the
// session, durably, before it is sent (the WARNING on ApplyResult holds
// here too).
func (s *Store) Raise(id wire.SessionID, class wire.DataClass, untrusted bool) error {
	return s.update(id, func(st policy.Session) (policy.Session, error) {
		return policy.RestoreSession(max(st.Taint(), class), st.Untrusted() || untrusted)
	})
}

// update replaces the session's state with what change makes of it and
// returns once the new state is on disk. A state that change leaves as it
// was is not written again: what is in memory is never above what is on
// disk (it was read from there, or written there first), so the disk
// already holds at least as much. TestUnchangedStateIsNotWritten proves it.
func (s *Store) update(id wire.SessionID, change func(policy.Session) (policy.Session, error)) error {
	e := s.of(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	st, err := s.load(id, e)
	if err != nil {
		return err
	}
	next, err := change(st)
	if err != nil {
		return err
	}
	if next.Taint() == st.Taint() && next.Untrusted() == st.Untrusted() {
		return nil
	}
	data, err := next.MarshalJSON()
	if err != nil {
		return err
	}
	if err := s.write(s.path(id), data); err != nil {
		return err
	}
	e.st = next
	return nil
}

func (s *Store) path(id wire.SessionID) string {
	return filepath.Join(s.dir, id.String()+".json")
}

// writeDurably replaces path with data so that a crash leaves the old or the
// new content, never a mix (atomicfile.Write).
func writeDurably(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600)
}

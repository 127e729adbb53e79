package brokerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"boxmaker/policy"
	"boxmaker/wire"
)

// sessions keeps each session's policy.Session in memory and on disk, one
// file per session under broker/sessions/, so that a restart keeps taint.
type sessions struct {
	dir string
	mu  sync.Mutex
	m   map[wire.SessionID]policy.Session
}

func openSessions(dir string) (*sessions, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &sessions{dir: dir, m: map[wire.SessionID]policy.Session{}}, nil
}

// get returns the session's state: stored, or new. A stored file that does
// not parse is an error, never a fresh (lower) state.
func (s *sessions) get(id wire.SessionID) (policy.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load(id)
}

func (s *sessions) load(id wire.SessionID) (policy.Session, error) {
	if st, ok := s.m[id]; ok {
		return st, nil
	}
	data, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return policy.NewSession(), nil
	}
	if err != nil {
		return policy.Session{}, err
	}
	st, err := policy.ParseSession(data)
	if err != nil {
		return policy.Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	s.m[id] = st
	return st, nil
}

// applyResult records that a result under g is about to reach the session,
// on disk before it returns.
//
// WARNING: call it before the result is sent. If the file were written after,
// a crash between the two would let the model see a secret result while the
// stored taint stayed lower. TestSecretTaintBlocksPrivateGrantAcrossRestart
// proves the stored taint is what a later call, and a restarted brokerd, go by.
func (s *sessions) applyResult(id wire.SessionID, g policy.Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(id)
	if err != nil {
		return err
	}
	if err := st.ApplyResult(g); err != nil {
		return err
	}
	data, err := st.MarshalJSON()
	if err != nil {
		return err
	}
	if err := writeDurably(s.path(id), data); err != nil {
		return err
	}
	s.m[id] = st
	return nil
}

func (s *sessions) path(id wire.SessionID) string {
	return filepath.Join(s.dir, id.String()+".json")
}

// writeDurably replaces path with data so that a crash leaves the old or the
// new content, never a mix: write a temporary file, fsync it, rename it over
// path, fsync the directory.
func writeDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

package handles

import (
	"errors"
	"testing"

	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

func session(t *testing.T, s string) wire.SessionID {
	t.Helper()
	id, err := wire.ParseSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Handles are numbered per session, survive a reopening, are unknown to
// another session, and stop at the session's bounds.
func TestStoreNumbersPerSessionAndKeepsBounds(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, config.Handles{MaxPerSession: 2, MaxSessionBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := session(t, "s1"), session(t, "s2")
	ref, err := s.Put(s1, "notes_read", wire.Secret, true, "PIN 0000")
	if err != nil || ref.Handle != "h1" || ref.Class != wire.Secret || !ref.Untrusted || ref.Bytes != 8 {
		t.Fatalf("first handle: %+v, %v", ref, err)
	}
	if ref, err := s.Put(s2, "http_fetch", wire.Public, false, "x"); err != nil || ref.Handle != "h1" {
		t.Fatalf("another session's first handle: %+v, %v", ref, err)
	}
	reopened, err := Open(dir, config.Handles{MaxPerSession: 2, MaxSessionBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := reopened.Put(s1, "notes_read", wire.Private, false, "y"); err != nil || ref.Handle != "h2" {
		t.Fatalf("after reopening: %+v, %v", ref, err)
	}
	if _, err := reopened.Put(s1, "notes_read", wire.Private, false, "z"); !errors.Is(err, ErrLimit) {
		t.Errorf("a third handle past max_per_session 2: %v", err)
	}
	h, ok, err := reopened.Get(s1, "h1")
	if err != nil || !ok || h.Content != "PIN 0000" || h.Class != wire.Secret {
		t.Errorf("h1 of s1: %+v %v %v", h, ok, err)
	}
	loaded, err := reopened.Load(s2, []string{"h1", "h2"})
	if err != nil || len(loaded) != 1 || loaded["h1"].Content != "x" {
		t.Errorf("s2 loads only its own: %+v %v", loaded, err)
	}
	if _, ok, _ := reopened.Get(s1, "../s2/h1"); ok {
		t.Error("a name that is no handle's reached another session")
	}
}

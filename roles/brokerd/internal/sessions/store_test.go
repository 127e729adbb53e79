package sessions

import (
	"errors"
	"sync"
	"testing"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"
)

func parsedGrant(t *testing.T, id, body string) policy.Grant {
	t.Helper()
	g, err := policy.ParseGrant(id+".toml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Grants whose results leave a session as it was, or raise its taint or
// its untrusted flag.
const (
	keepsGrant      = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n[constraints]\npatterns = [\"ls\"]\n"
	untrustsGrant   = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npatterns = [\"ls\"]\n"
	secretGrantBody = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\n[constraints]\npatterns = [\"ls\"]\n"
)

// countWrites makes s count its durable writes.
func countWrites(s *Store) *int {
	n := new(int)
	var mu sync.Mutex
	s.write = func(path string, data []byte) error {
		mu.Lock()
		*n++
		mu.Unlock()
		return writeDurably(path, data)
	}
	return n
}

// A result that leaves the session's state as it was writes nothing; one
// that raises it is on disk when ApplyResult returns, and a new Store
// (a restarted brokerd) reads it back.
func TestUnchangedStateIsNotWritten(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writes := countWrites(s)
	id, _ := wire.ParseSessionID("chat")
	for _, step := range []struct {
		grant  string
		writes int
	}{
		{keepsGrant, 0},
		{untrustsGrant, 1},
		{untrustsGrant, 1},
		{keepsGrant, 1},
		{secretGrantBody, 2},
		{untrustsGrant, 2},
		{secretGrantBody, 2},
	} {
		if err := s.ApplyResult(id, parsedGrant(t, "g", step.grant)); err != nil {
			t.Fatal(err)
		}
		if *writes != step.writes {
			t.Fatalf("after a result under\n%s%d writes, want %d", step.grant, *writes, step.writes)
		}
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := again.Get(id)
	if err != nil || st.Taint() != wire.Secret || !st.Untrusted() {
		t.Errorf("after a restart: taint %v untrusted %v (%v), want secret and untrusted", st.Taint(), st.Untrusted(), err)
	}
}

// One session's fsync never holds up another session's call, and changes
// to one session made at once all reach its stored state.
func TestSessionsDoNotWaitForEachOther(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	slow, _ := wire.ParseSessionID("slow")
	fast, _ := wire.ParseSessionID("fast")
	entered, release := make(chan struct{}), make(chan struct{})
	s.write = func(path string, data []byte) error {
		if path == s.path(slow) {
			close(entered)
			<-release
		}
		return writeDurably(path, data)
	}
	grants := []policy.Grant{parsedGrant(t, "g", keepsGrant), parsedGrant(t, "g", untrustsGrant), parsedGrant(t, "g", secretGrantBody)}
	done := make(chan error)
	go func() { done <- s.ApplyResult(slow, grants[2]) }()
	<-entered
	finished := make(chan error)
	go func() {
		var errs []error
		for _, g := range grants[1:] {
			errs = append(errs, s.ApplyResult(fast, g))
		}
		_, err := s.Get(fast)
		finished <- errors.Join(append(errs, err)...)
	}()
	select {
	case err := <-finished:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a session waited for another session's write")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.write = writeDurably
	var wg sync.WaitGroup
	for i := range 16 {
		g := grants[i%3]
		wg.Go(func() {
			if err := s.ApplyResult(slow, g); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	again, _ := Open(s.dir)
	if st, err := again.Get(slow); err != nil || st.Taint() != wire.Secret || !st.Untrusted() {
		t.Errorf("stored after concurrent results: taint %v untrusted %v (%v), want secret and untrusted", st.Taint(), st.Untrusted(), err)
	}
}

package brokerd

import (
	"strings"
	"testing"
	"time"
)

// A wall clock stepped back behind the last record is logged by brokerd
// once per episode, not silently clamped: the records keep the chain's
// time, the episode ends when the clock catches up, and a later step back
// is a new episode with a line of its own.
func TestClockSteppedBackIsLoggedOncePerEpisode(t *testing.T) {
	h := newHome(t, "", nil)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	startInProcess(h, clock)
	lines := func() int { return strings.Count(h.log.String(), "it was stepped back") }
	h.deniedCalls(1)
	clock.Add(-time.Hour)
	h.deniedCalls(2)
	if n := lines(); n != 1 {
		t.Fatalf("%d log lines for one step back, want 1:\n%s", n, h.log)
	}
	for _, r := range h.auditRecords()[1:] {
		if got := r.Time.Time(); !got.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("record %d has time %s, want the chain's 10:00 kept", r.Seq, got)
		}
	}
	clock.Add(2 * time.Hour)
	h.deniedCalls(1)
	clock.Add(-2 * time.Hour)
	h.deniedCalls(1)
	if n := lines(); n != 2 {
		t.Fatalf("%d log lines after a second step back, want 2:\n%s", n, h.log)
	}
}

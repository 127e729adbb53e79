package jobruns

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/wire"
)

func everyMinute(t *testing.T) jobs.Job {
	t.Helper()
	j, err := jobs.ParseJob("tick.toml", []byte("every = \"1m\"\nprompt = \"p\"\ndeliver = \"log\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A start is durable before its record (brokerd's audit write) is called,
// and the record is called under the lock: no other caller sees the run
// before it returns. A failed record fails the start, and the due time
// stays taken.
func TestStartRecordsUnderTheLock(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 7, 0, 30, 0, time.UTC)
	r, err := Open(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	job := everyMinute(t)
	if _, err := r.List(map[string]jobs.Job{"tick": job}, now); err != nil { // first seen
		t.Fatal(err)
	}
	later := now.Add(90 * time.Second)
	boom := errors.New("audit log is full")
	_, _, err = r.Start(job, wire.TriggerSchedule, later, func(s Started) error {
		if r.mu.TryLock() {
			t.Error("record was called without the lock held")
			r.mu.Unlock()
		}
		data, err := os.ReadFile(filepath.Join(dir, "tick.json"))
		if err != nil || !strings.Contains(string(data), s.Run.Session.String()) {
			t.Errorf("the run is not durable before its record: %v %s", err, data)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Start = %v, want the record's error", err)
	}
	_, why, err := r.Start(job, wire.TriggerSchedule, later.Add(time.Second), func(Started) error { return nil })
	if err != nil || !strings.Contains(why, "still running") {
		t.Fatalf("second start = %q, %v; want refused, its run still running", why, err)
	}
}

// A run left running by a brokerd that stopped is interrupted at Open, so
// that its session loses the job's grants.
func TestOpenInterruptsARunningRun(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 7, 0, 30, 0, time.UTC)
	r, err := Open(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	job := everyMinute(t)
	if _, err := r.List(map[string]jobs.Job{"tick": job}, now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(90 * time.Second)
	run, why, err := r.Start(job, wire.TriggerSchedule, later, func(Started) error { return nil })
	if err != nil || why != "" {
		t.Fatalf("Start: %q, %v", why, err)
	}
	if got := r.JobOf(run.Session, later); got != "tick" {
		t.Fatalf("JobOf = %q, want tick", got)
	}
	again, err := Open(dir, later.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := again.JobOf(run.Session, later.Add(time.Second)); got != "" {
		t.Fatalf("after a restart JobOf = %q, want none", got)
	}
}

package jobruns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/internal/atomicfile"
	"boxmaker/wire"
)

// Runs is brokerd's own record of scheduled jobs (DESIGN.md section 13):
// when it first saw each job, the latest due time it minted a run for, and
// the runs, one file per job under broker/jobs/. It is the only thing that
// gives a session a job's grants: a session is a job's while its run is
// running, and loopd's naming of sessions counts for nothing.
type Runs struct {
	dir string

	mu        sync.Mutex
	jobs      map[string]*jobRecord
	bySession map[string]string // session -> job, for every run kept
	triggers  map[string]ownerTrigger
	told      map[string]bool // sessions whose end gatewayd was told of (Ended)
}

// jobRecord is one job's file, broker/jobs/<id>.json.
type jobRecord struct {
	Job       string         `json:"job"`
	FirstSeen wire.Timestamp `json:"first_seen"`
	// LastDue is the latest due time a scheduled or caught-up run was
	// minted for: no run is ever minted for it, or anything before it,
	// again.
	LastDue *wire.Timestamp `json:"last_due"`
	Runs    []wire.JobRun   `json:"runs"` // oldest first
}

// ownerTrigger is the owner's `jobs run`, waiting for loopd to claim it.
// It is kept in memory only: a brokerd restart drops it, and the owner
// runs the command again.
type ownerTrigger struct {
	at, expires time.Time
	approver    string // local:<user>, for the audit record
}

// keepRuns bounds a job's file; older runs fall out of it (the audit log
// keeps every start). A session whose run fell out is no longer the job's,
// which its deadline had ended long before.
const keepRuns = 50

// Open loads broker/jobs/. A run still running was cut short by the
// brokerd that stopped: it is recorded as interrupted now, so that its
// session loses the job's grants (fail closed) and the run is never
// started again (its due time stays taken).
func Open(dir string, now time.Time) (*Runs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	r := &Runs{dir: dir, jobs: map[string]*jobRecord{}, bySession: map[string]string{}, triggers: map[string]ownerTrigger{}, told: map[string]bool{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rec, err := readJobRecord(filepath.Join(dir, e.Name()), id)
		if err != nil {
			return nil, err
		}
		r.jobs[id] = rec
		for _, run := range rec.Runs {
			r.bySession[run.Session.String()] = id
		}
		if r.interruptRunning(rec, now, "brokerd restarted during the run") {
			if err := r.save(rec); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// readJobRecord reads one file strictly: a record that does not parse is an
// error, never a fresh (forgetful) one that could run a due time twice.
func readJobRecord(path, id string) (*jobRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec jobRecord
	if err := wire.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rec.Job != id {
		return nil, fmt.Errorf("%s: the record is of job %q", path, rec.Job)
	}
	return &rec, nil
}

// save writes rec durably (atomicfile.Write: a crash leaves the old or the
// new content, never a mix).
func (r *Runs) save(rec *jobRecord) error {
	data, err := wire.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(r.dir, rec.Job+".json"), data, 0o600)
}

// interruptRunning ends rec's running runs as interrupted, and reports
// whether it changed any.
func (r *Runs) interruptRunning(rec *jobRecord, now time.Time, why string) bool {
	changed := false
	for i := range rec.Runs {
		if rec.Runs[i].Outcome == wire.RunRunning {
			endRun(&rec.Runs[i], wire.RunInterrupted, why, now)
			changed = true
		}
	}
	return changed
}

// expire ends, as interrupted, the runs of rec whose deadline passed with
// no word from loopd, and reports whether it changed any.
func expire(rec *jobRecord, now time.Time) bool {
	changed := false
	for i := range rec.Runs {
		run := &rec.Runs[i]
		if run.Outcome == wire.RunRunning && !now.Before(run.Deadline.Time()) {
			endRun(run, wire.RunInterrupted, "no end was reported by the run's deadline (max_turn)", run.Deadline.Time())
			changed = true
		}
	}
	return changed
}

func endRun(run *wire.JobRun, outcome wire.RunOutcome, detail string, at time.Time) {
	ts, err := wire.TimestampOf(at)
	if err == nil {
		run.Ended = &ts
	}
	run.Outcome, run.Detail = outcome, detail
}

// record returns the job's record, made (and saved) the first time the job
// is seen: its first-seen time is where an every job counts from, and
// nothing before it is ever due.
//
// Called with r.mu held.
func (r *Runs) record(id string, now time.Time) (*jobRecord, error) {
	if rec, ok := r.jobs[id]; ok {
		if expire(rec, now) {
			return rec, r.save(rec)
		}
		return rec, nil
	}
	seen, err := wire.TimestampOf(now)
	if err != nil {
		return nil, err
	}
	rec := &jobRecord{Job: id, FirstSeen: seen, Runs: []wire.JobRun{}}
	if err := r.save(rec); err != nil {
		return nil, err
	}
	r.jobs[id] = rec
	return rec, nil
}

// JobOf names the job whose running run the session is, or "" for every
// other session: a chat, a job's session after its run ended or its
// deadline passed, or one merely named like a job's.
func (r *Runs) JobOf(session wire.SessionID, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.bySession[session.String()]
	if !ok {
		return ""
	}
	for _, run := range r.jobs[id].Runs {
		if run.Session == session && run.Outcome == wire.RunRunning && now.Before(run.Deadline.Time()) {
			return id
		}
	}
	return ""
}

// add records a new run durably, before anyone learns of its session.
//
// Called with r.mu held.
func (r *Runs) add(rec *jobRecord, run wire.JobRun, due *wire.Timestamp) error {
	next := *rec
	next.Runs = append(append([]wire.JobRun{}, rec.Runs...), run)
	if len(next.Runs) > keepRuns {
		for _, old := range next.Runs[:len(next.Runs)-keepRuns] {
			delete(r.bySession, old.Session.String())
			delete(r.told, old.Session.String())
		}
		next.Runs = next.Runs[len(next.Runs)-keepRuns:]
	}
	if due != nil {
		next.LastDue = due
	}
	if err := r.save(&next); err != nil {
		return err
	}
	*rec = next
	r.bySession[run.Session.String()] = rec.Job
	return nil
}

// ErrNoRun answers a job_done for a session brokerd minted no run for.
var ErrNoRun = errors.New("no run of a job has that session")

// Done records how loopd says a run ended. A run that already ended
// (interrupted by a restart or its deadline) keeps that outcome.
func (r *Runs) Done(m wire.JobDone, now time.Time) (wire.JobRecorded, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.bySession[m.Session.String()]
	if !ok {
		return wire.JobRecorded{}, ErrNoRun
	}
	rec := r.jobs[id]
	expire(rec, now)
	for i := range rec.Runs {
		run := &rec.Runs[i]
		if run.Session != m.Session {
			continue
		}
		if run.Outcome == wire.RunRunning && m.Outcome != wire.RunRunning {
			endRun(run, m.Outcome, truncateDetail(m.Detail), now)
		}
		return wire.JobRecorded{Session: m.Session, Outcome: run.Outcome}, r.save(rec)
	}
	return wire.JobRecorded{}, ErrNoRun
}

// truncateDetail keeps a run's detail to a line's worth in the record.
func truncateDetail(s string) string {
	const max = 500
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// lastRun is rec's newest run, if any.
func lastRun(rec *jobRecord) (wire.JobRun, bool) {
	if len(rec.Runs) == 0 {
		return wire.JobRun{}, false
	}
	return rec.Runs[len(rec.Runs)-1], true
}

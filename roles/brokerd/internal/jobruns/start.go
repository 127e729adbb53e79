package jobruns

import (
	"fmt"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/wire"
)

const (
	// dueGrace is how late a scheduled run may still start: loopd wakes at
	// the due time, but may be busy or restarting. A run later than this
	// is missed, and only catch_up makes it up.
	dueGrace = 5 * time.Minute
	// triggerTTL is how long the owner's `jobs run` waits for loopd to
	// claim it, as long as an approval waits for the owner.
	triggerTTL = 10 * time.Minute
)

// Started is a run minted and durable in brokerd's record, which the
// audit log must hold before anyone learns of its session.
type Started struct {
	Run      wire.JobRun
	Approver string // the owner (local:<user>), for the owner's run; "" for a due run
}

// runPlan is a run brokerd is about to mint.
type runPlan struct {
	run      wire.JobRun
	due      *wire.Timestamp // the due time it takes, for scheduled and caught-up runs
	approver string          // the owner, for the owner's run
}

// Start mints a run of job for trig, if one may start now: job is due now
// (or missed, with catch_up, or triggered by the owner) and was not
// started for that time. The run is durable, then record is called with
// it, before Start returns, all under the record's lock, so that no other
// start, list or end sees the run before the audit log holds it. Start
// returns the run, or why none may start (refused), or an error of the
// record or of record.
func (r *Runs) Start(job jobs.Job, trig wire.RunTrigger, now time.Time, record func(Started) error) (run wire.JobRun, refused string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.record(job.ID(), now)
	if err != nil {
		return wire.JobRun{}, "", err
	}
	plan, why := r.plan(job, rec, trig, now)
	if why != "" {
		return wire.JobRun{}, why, nil
	}
	if err := r.add(rec, plan.run, plan.due); err != nil {
		return wire.JobRun{}, "", err
	}
	if err := record(Started{Run: plan.run, Approver: plan.approver}); err != nil {
		return wire.JobRun{}, "", err
	}
	return plan.run, "", nil
}

// plan decides whether a run of job may start now for trig, and which.
//
// Called with r.mu held.
func (r *Runs) plan(job jobs.Job, rec *jobRecord, trig wire.RunTrigger, now time.Time) (runPlan, string) {
	if last, ok := lastRun(rec); ok && last.Outcome == wire.RunRunning {
		return runPlan{}, fmt.Sprintf("its run %s is still running (until %s)", last.Session, last.Deadline)
	}
	switch trig {
	case wire.TriggerSchedule:
		return r.planDue(job, rec, trig, now, now.Add(-dueGrace))
	case wire.TriggerCatchUp:
		if !job.CatchUp() {
			return runPlan{}, "catch_up is not set in its job file"
		}
		return r.planDue(job, rec, trig, now, time.Time{})
	case wire.TriggerOwner:
		return r.planOwner(job, now)
	}
	return runPlan{}, fmt.Sprintf("unknown trigger %q", trig)
}

// planDue mints the latest due time after since (and after the first-seen
// time and the last due time a run took), if there is one.
func (r *Runs) planDue(job jobs.Job, rec *jobRecord, trig wire.RunTrigger, now, since time.Time) (runPlan, string) {
	firstSeen := rec.FirstSeen.Time()
	after := latest(firstSeen, since)
	if rec.LastDue != nil {
		after = latest(after, rec.LastDue.Time())
	}
	due, ok := job.Last(firstSeen, after, now)
	if !ok {
		if taken, was := job.Last(firstSeen, latest(firstSeen, since), now); was {
			return runPlan{}, fmt.Sprintf("already started for %s", ts(taken))
		}
		if trig == wire.TriggerCatchUp {
			return runPlan{}, fmt.Sprintf("no run was missed; the next is at %s", ts(job.Next(firstSeen, now)))
		}
		return runPlan{}, fmt.Sprintf("not due: the next run is at %s", ts(job.Next(firstSeen, now)))
	}
	session, err := jobs.JobSession(job.ID(), due, false)
	if err != nil {
		return runPlan{}, err.Error()
	}
	if _, taken := r.bySession[session.String()]; taken {
		return runPlan{}, fmt.Sprintf("already started for %s", ts(due))
	}
	d := ts(due)
	return runPlan{run: newRun(session, trig, due, now, job.TurnLimit()), due: &d}, ""
}

// planOwner claims the owner's trigger, made through the admin socket.
func (r *Runs) planOwner(job jobs.Job, now time.Time) (runPlan, string) {
	t, ok := r.triggers[job.ID()]
	if !ok || !now.Before(t.expires) {
		delete(r.triggers, job.ID())
		return runPlan{}, "the owner has not asked for a run (boxmaker jobs run " + job.ID() + ")"
	}
	session, err := jobs.JobSession(job.ID(), t.at, true)
	if err != nil {
		return runPlan{}, err.Error()
	}
	delete(r.triggers, job.ID())
	if _, taken := r.bySession[session.String()]; taken {
		return runPlan{}, "a run of that second was started already"
	}
	return runPlan{run: newRun(session, wire.TriggerOwner, t.at, now, job.TurnLimit()), approver: t.approver}, ""
}

func newRun(session wire.SessionID, trig wire.RunTrigger, scheduled, now time.Time, limit time.Duration) wire.JobRun {
	return wire.JobRun{Session: session, Trigger: trig, Scheduled: ts(scheduled), Started: ts(now),
		Deadline: ts(now.Add(limit)), Outcome: wire.RunRunning}
}

// ts is t as a wire timestamp; the times here are the clock's and the
// schedule's, always within the timestamp's years.
func ts(t time.Time) wire.Timestamp {
	v, _ := wire.TimestampOf(t)
	return v
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

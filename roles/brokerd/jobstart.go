package brokerd

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
	// jobStartTool is the tool a run's audit record names: the audit
	// record has no kind of its own for it, so a start is recorded as a
	// decision on this pseudo-tool in the minted session, with no grant:
	// allowed for a due run, approved by the owner for the owner's.
	jobStartTool = "job_start"
)

// runPlan is a run brokerd is about to mint.
type runPlan struct {
	run      wire.JobRun
	due      *wire.Timestamp // the due time it takes, for scheduled and caught-up runs
	approver string          // the owner, for the owner's run
}

// jobStart answers loopd's job_start: a session only for a job that exists,
// is due now (or missed, with catch_up, or triggered by the owner) and was
// not started for that time. The run is durable, then audited, before the
// session is answered.
func (b *broker) jobStart(m wire.JobStart) (wire.Message, error) {
	now := b.clock()
	job, ok := b.loadJobs()[m.Job]
	if !ok {
		return b.refuseJob(m.Job, "no valid job file jobs/"+m.Job+".toml"), nil
	}
	r := b.jobRuns
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.record(m.Job, now)
	if err != nil {
		return nil, err
	}
	plan, why := r.plan(job, rec, m.Trigger, now)
	if why != "" {
		return b.refuseJob(m.Job, why), nil
	}
	if err := r.add(rec, plan.run, plan.due); err != nil {
		return nil, err
	}
	if err := b.auditJobStart(m.Job, plan); err != nil {
		return nil, err
	}
	run := plan.run
	b.log.Printf("job %s: %s run for %s started as session %s, until %s", m.Job, run.Trigger, run.Scheduled, run.Session, run.Deadline)
	return wire.JobStarted{Job: m.Job, Session: run.Session, Trigger: run.Trigger, Scheduled: run.Scheduled, Deadline: run.Deadline}, nil
}

func (b *broker) refuseJob(job, why string) wire.JobRefused {
	b.log.Printf("job %s: refused: %s", job, why)
	return wire.JobRefused{Job: job, Reason: why}
}

// plan decides whether a run of job may start now for trig, and which.
//
// Called with r.mu held.
func (r *jobRuns) plan(job jobs.Job, rec *jobRecord, trig wire.RunTrigger, now time.Time) (runPlan, string) {
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
func (r *jobRuns) planDue(job jobs.Job, rec *jobRecord, trig wire.RunTrigger, now, since time.Time) (runPlan, string) {
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
func (r *jobRuns) planOwner(job jobs.Job, now time.Time) (runPlan, string) {
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

// auditJobStart writes the start to the audit log and returns once it is
// durable; like any decision, the session is answered only after.
func (b *broker) auditJobStart(job string, p runPlan) error {
	args, err := wire.Marshal(&struct {
		Job       string          `json:"job"`
		Trigger   wire.RunTrigger `json:"trigger"`
		Scheduled wire.Timestamp  `json:"scheduled"`
		Deadline  wire.Timestamp  `json:"deadline"`
	}{job, p.run.Trigger, p.run.Scheduled, p.run.Deadline})
	if err != nil {
		return err
	}
	var dec wire.DecisionRecord = wire.DecisionAllowed{Grant: ""}
	if p.approver != "" {
		dec = wire.DecisionApproved{Grant: "", Approver: p.approver}
	}
	_, err = b.audit.Append(wire.AuditRecord{Session: p.run.Session, Call: 0, Tool: jobStartTool,
		Arguments: string(args), SessionTaint: wire.Private, Decision: dec})
	if err != nil {
		b.fatal(fmt.Errorf("audit log: %w", err))
	}
	return err
}

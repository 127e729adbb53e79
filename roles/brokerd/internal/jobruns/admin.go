package jobruns

import (
	"maps"
	"slices"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/wire"
)

// The answers other than a start's: job_list for loopd's scheduler and the
// owner, job_show and job_run (the owner's trigger) on the admin socket,
// and the job_ended brokerd tells gatewayd of.

// List is job_list's answer: every job of byID (the valid job files), by
// id, as brokerd will run it. Listing records the first-seen time of a job
// new to brokerd, so that loopd's look each minute starts an every job's
// count.
func (r *Runs) List(byID map[string]jobs.Job, now time.Time) (wire.JobListResult, error) {
	ids := slices.Sorted(maps.Keys(byID))
	r.mu.Lock()
	defer r.mu.Unlock()
	res := wire.JobListResult{Jobs: []wire.JobInfo{}}
	for _, id := range ids {
		rec, err := r.record(id, now)
		if err != nil {
			return wire.JobListResult{}, err
		}
		res.Jobs = append(res.Jobs, r.info(byID[id], rec, now))
	}
	return res, nil
}

// info is a job as job_list shows it. Next is a due time not yet started
// while it may still start (within dueGrace), else the next due time.
//
// Called with r.mu held.
func (r *Runs) info(job jobs.Job, rec *jobRecord, now time.Time) wire.JobInfo {
	info := wire.JobInfo{Job: job.ID(), Schedule: job.Schedule(), TimeZone: zoneName(job), Deliver: job.Deliver().String(),
		MaxTurn: jobs.DurationText(job.TurnLimit()), CatchUp: job.CatchUp()}
	firstSeen := rec.FirstSeen.Time()
	after := latest(firstSeen, now.Add(-dueGrace))
	if rec.LastDue != nil {
		after = latest(after, rec.LastDue.Time())
	}
	next, due := job.Last(firstSeen, after, now)
	if !due {
		next = job.Next(firstSeen, now)
	}
	if !next.IsZero() {
		n := ts(next)
		info.Next = &n
	}
	if t, ok := r.triggers[job.ID()]; ok && now.Before(t.expires) {
		at := ts(t.at)
		info.Triggered = &at
	}
	if last, ok := lastRun(rec); ok {
		info.Last = &last
	}
	return info
}

// zoneName names the zone a cron job is read in: its IANA name, or "Local"
// for the host's; "" for an every job, which counts real time.
func zoneName(job jobs.Job) string {
	if z := job.Zone(); z != nil {
		return z.String()
	}
	return ""
}

// Show is job_show's answer: the job, its prompt and its runs, newest
// first.
func (r *Runs) Show(job jobs.Job, now time.Time) (wire.JobShowResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.record(job.ID(), now)
	if err != nil {
		return wire.JobShowResult{}, err
	}
	runs := slices.Clone(rec.Runs)
	slices.Reverse(runs)
	return wire.JobShowResult{Job: r.info(job, rec, now), Prompt: job.Prompt(), Runs: runs}, nil
}

// Trigger is the owner's job_run: a trigger that loopd's next job_start
// with trigger owner claims, or why none is made (refused). made says the
// trigger is new (not one still pending). Only the admin socket may take
// it, so that a compromised loopd cannot make one.
func (r *Runs) Trigger(job jobs.Job, approver string, now time.Time) (res wire.JobTriggered, refused string, made bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.record(job.ID(), now)
	if err != nil {
		return wire.JobTriggered{}, "", false, err
	}
	if last, ok := lastRun(rec); ok && last.Outcome == wire.RunRunning {
		return wire.JobTriggered{}, "its run " + last.Session.String() + " is still running", false, nil
	}
	t, pending := r.triggers[job.ID()]
	if !pending || !now.Before(t.expires) {
		at := now.Truncate(time.Second)
		session, err := jobs.JobSession(job.ID(), at, true)
		if err != nil {
			return wire.JobTriggered{}, "", false, err
		}
		if _, taken := r.bySession[session.String()]; taken {
			return wire.JobTriggered{}, "a run of it started this second; ask again", false, nil
		}
		t = ownerTrigger{at: at, expires: now.Add(triggerTTL), approver: approver}
		r.triggers[job.ID()] = t
		made = true
	}
	return wire.JobTriggered{Job: job.ID(), At: ts(t.at), Expires: ts(t.expires)}, "", made, nil
}

// Ended is the job_ended of session's run, once: a run brokerd minted,
// ended, of a job in byID that delivers to Mattermost, not told of yet.
// It counts as told from here on.
func (r *Runs) Ended(session wire.SessionID, byID map[string]jobs.Job) (wire.JobEnded, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.bySession[session.String()]
	job, known := byID[id]
	if !ok || !known || job.Deliver().Kind() == jobs.DeliverLog || r.told[session.String()] {
		return wire.JobEnded{}, false
	}
	for _, run := range r.jobs[id].Runs {
		if run.Session == session && run.Outcome != wire.RunRunning {
			r.told[session.String()] = true
			return wire.JobEnded{Job: id, Session: session, Trigger: run.Trigger, Scheduled: run.Scheduled,
				TimeZone: zoneName(job), To: job.Deliver().String(), Outcome: run.Outcome}, true
		}
	}
	return wire.JobEnded{}, false
}

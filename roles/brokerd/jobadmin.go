package brokerd

import (
	"maps"
	"slices"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/wire"
)

// The job kinds other than job_start: job_list for loopd's scheduler and
// the owner, job_show and job_run (the owner's trigger) on the admin
// socket, job_done from loopd.

// loadJobs reads jobs/ as it is now, by id. A file that does not parse is
// left out (fail closed: no run, no first-seen time) and why is logged once.
func (b *broker) loadJobs() map[string]jobs.Job {
	loaded, bad, err := jobs.LoadJobs(b.paths.Jobs)
	if err != nil {
		b.logOnce(err.Error())
		return nil
	}
	for _, e := range bad {
		b.logOnce("ignoring a job file: " + e.Error())
	}
	out := make(map[string]jobs.Job, len(loaded))
	for _, j := range loaded {
		out[j.ID()] = j
	}
	return out
}

// jobList answers job_list: every valid job, by id, as brokerd will run it.
// Listing records the first-seen time of a job new to brokerd, so that
// loopd's look each minute starts an every job's count.
func (b *broker) jobList() (wire.JobListResult, error) {
	now := b.clock()
	byID := b.loadJobs()
	ids := slices.Sorted(maps.Keys(byID))
	r := b.jobRuns
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
func (r *jobRuns) info(job jobs.Job, rec *jobRecord, now time.Time) wire.JobInfo {
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

// jobShow answers job_show: the job, its prompt and its runs, newest first.
func (b *broker) jobShow(m wire.JobShow) (wire.Message, error) {
	now := b.clock()
	job, ok := b.loadJobs()[m.Job]
	if !ok {
		return wire.JobRefused{Job: m.Job, Reason: "no valid job file jobs/" + m.Job + ".toml"}, nil
	}
	r := b.jobRuns
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.record(m.Job, now)
	if err != nil {
		return nil, err
	}
	runs := slices.Clone(rec.Runs)
	slices.Reverse(runs)
	return wire.JobShowResult{Job: r.info(job, rec, now), Prompt: job.Prompt(), Runs: runs}, nil
}

// jobTrigger answers the owner's job_run: a trigger that loopd's next
// job_start with trigger owner claims. Only the admin socket takes it, so
// a compromised loopd cannot make one.
func (b *broker) jobTrigger(m wire.JobRunNow, approver string) (wire.Message, error) {
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
	if last, ok := lastRun(rec); ok && last.Outcome == wire.RunRunning {
		return b.refuseJob(m.Job, "its run "+last.Session.String()+" is still running"), nil
	}
	t, pending := r.triggers[job.ID()]
	if !pending || !now.Before(t.expires) {
		at := now.Truncate(time.Second)
		session, err := jobs.JobSession(job.ID(), at, true)
		if err != nil {
			return nil, err
		}
		if _, taken := r.bySession[session.String()]; taken {
			return b.refuseJob(m.Job, "a run of it started this second; ask again"), nil
		}
		t = ownerTrigger{at: at, expires: now.Add(triggerTTL), approver: approver}
		r.triggers[job.ID()] = t
		b.log.Printf("job %s: the owner (%s) asked for a run; loopd may start it until %s", m.Job, approver, ts(t.expires))
	}
	return wire.JobTriggered{Job: m.Job, At: ts(t.at), Expires: ts(t.expires)}, nil
}

// jobDone records loopd's word on how a run ended.
func (b *broker) jobDone(m wire.JobDone) (wire.Message, error) {
	res, err := b.jobRuns.done(m, b.clock())
	if err == errNoRun {
		return wire.JobRefused{Job: "", Reason: "session " + m.Session.String() + " is no run brokerd started"}, nil
	}
	if err != nil {
		return nil, err
	}
	b.log.Printf("session %s: the run ended %s (loopd said %s)", m.Session, res.Outcome, m.Outcome)
	b.tellJobEnded(m.Session)
	return res, nil
}

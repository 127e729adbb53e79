package brokerd

import (
	"fmt"

	"boxmaker/policy"
	"boxmaker/policy/jobs"
	"boxmaker/roles/brokerd/internal/jobruns"
	"boxmaker/wire"
)

// brokerd's side of the job kinds (DESIGN.md section 13): the job files it
// reads, the audit record of a start and the log. The runs themselves are
// roles/brokerd/internal/jobruns'.

// jobStartTool is the tool a run's audit record names: the audit record has
// no kind of its own for it, so a start is recorded as a decision on this
// pseudo-tool in the minted session, with no grant: allowed for a due run,
// approved by the owner for the owner's.
const jobStartTool = "job_start"

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

// grantsIn is the grants that may decide a call in session: those of every
// session, and a job's own while the session is that job's running run, by
// brokerd's record alone (policy.GrantsForJob).
func (b *broker) grantsIn(session wire.SessionID) []policy.Grant {
	return policy.GrantsForJob(b.grants(), b.jobRuns.JobOf(session, b.clock()))
}

// jobStart answers loopd's job_start: a session only for a job that exists
// and whose run jobruns mints. The run is durable, then audited, before the
// session is answered.
func (b *broker) jobStart(m wire.JobStart) (wire.Message, error) {
	now := b.clock()
	job, ok := b.loadJobs()[m.Job]
	if !ok {
		return b.refuseJob(m.Job, "no valid job file jobs/"+m.Job+".toml"), nil
	}
	run, why, err := b.jobRuns.Start(job, m.Trigger, now, func(s jobruns.Started) error { return b.auditJobStart(m.Job, s) })
	if err != nil {
		return nil, err
	}
	if why != "" {
		return b.refuseJob(m.Job, why), nil
	}
	b.log.Printf("job %s: %s run for %s started as session %s, until %s", m.Job, run.Trigger, run.Scheduled, run.Session, run.Deadline)
	return wire.JobStarted{Job: m.Job, Session: run.Session, Trigger: run.Trigger, Scheduled: run.Scheduled, Deadline: run.Deadline}, nil
}

func (b *broker) refuseJob(job, why string) wire.JobRefused {
	b.log.Printf("job %s: refused: %s", job, why)
	return wire.JobRefused{Job: job, Reason: why}
}

// auditJobStart writes the start to the audit log and returns once it is
// durable; like any decision, the session is answered only after. jobruns
// calls it with its record's lock held, so no other job kind sees the run
// before the log holds it.
func (b *broker) auditJobStart(job string, s jobruns.Started) error {
	args, err := wire.Marshal(&struct {
		Job       string          `json:"job"`
		Trigger   wire.RunTrigger `json:"trigger"`
		Scheduled wire.Timestamp  `json:"scheduled"`
		Deadline  wire.Timestamp  `json:"deadline"`
	}{job, s.Run.Trigger, s.Run.Scheduled, s.Run.Deadline})
	if err != nil {
		return err
	}
	var dec wire.DecisionRecord = wire.DecisionAllowed{Grant: ""}
	if s.Approver != "" {
		dec = wire.DecisionApproved{Grant: "", Approver: s.Approver}
	}
	_, err = b.audit.Append(wire.AuditRecord{Session: s.Run.Session, Call: 0, Tool: jobStartTool,
		Arguments: string(args), SessionTaint: wire.Private, Decision: dec})
	if err != nil {
		b.fatal(fmt.Errorf("audit log: %w", err))
	}
	return err
}

// jobList answers job_list: every valid job, by id, as brokerd will run it.
func (b *broker) jobList() (wire.JobListResult, error) {
	now := b.clock()
	return b.jobRuns.List(b.loadJobs(), now)
}

// jobShow answers job_show: the job, its prompt and its runs, newest first.
func (b *broker) jobShow(m wire.JobShow) (wire.Message, error) {
	now := b.clock()
	job, ok := b.loadJobs()[m.Job]
	if !ok {
		return wire.JobRefused{Job: m.Job, Reason: "no valid job file jobs/" + m.Job + ".toml"}, nil
	}
	res, err := b.jobRuns.Show(job, now)
	if err != nil {
		return nil, err
	}
	return res, nil
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
	res, why, made, err := b.jobRuns.Trigger(job, approver, now)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return b.refuseJob(m.Job, why), nil
	}
	if made {
		b.log.Printf("job %s: the owner (%s) asked for a run; loopd may start it until %s", m.Job, approver, res.Expires)
	}
	return res, nil
}

// jobDone records loopd's word on how a run ended.
func (b *broker) jobDone(m wire.JobDone) (wire.Message, error) {
	res, err := b.jobRuns.Done(m, b.clock())
	if err == jobruns.ErrNoRun {
		return wire.JobRefused{Job: "", Reason: "session " + m.Session.String() + " is no run brokerd started"}, nil
	}
	if err != nil {
		return nil, err
	}
	b.log.Printf("session %s: the run ended %s (loopd said %s)", m.Session, res.Outcome, m.Outcome)
	b.tellJobEnded(m.Session)
	return res, nil
}

package bxctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// jobDueGrace is brokerd's dueGrace: how late a scheduled run may still
// start, so that a due time within it is still "next".
const jobDueGrace = 5 * time.Minute

// maxJobRecord bounds what is read of one of brokerd's job records
// (keepRuns runs of a few hundred bytes each).
const maxJobRecord = 4 << 20

// jobRecordFile is brokerd's broker/jobs/<id>.json, as brokerd writes it.
type jobRecordFile struct {
	Job       string          `json:"job"`
	FirstSeen wire.Timestamp  `json:"first_seen"`
	LastDue   *wire.Timestamp `json:"last_due"`
	Runs      []wire.JobRun   `json:"runs"`
}

// readJobList is job_list's answer worked out from the files when brokerd
// is down, as brokerd's jobList would give it: the valid jobs of jobs/ (the
// owner's), each with brokerd's record of it, a run past its deadline
// shown interrupted, as brokerd would record it. Nothing is written, and
// no owner's trigger is pending (brokerd keeps those in memory). The
// records are brokerd's to write: each is opened beneath the home without
// following a link (openBeneath).
func readJobList(paths config.Paths, now time.Time) (wire.JobListResult, []error, error) {
	loaded, bad, err := jobs.LoadJobs(paths.Jobs)
	if err != nil {
		return wire.JobListResult{}, nil, err
	}
	homeFD, err := unix.Open(paths.Home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return wire.JobListResult{}, nil, &os.PathError{Op: "open", Path: paths.Home, Err: err}
	}
	defer unix.Close(homeFD)
	res := wire.JobListResult{Jobs: []wire.JobInfo{}}
	for _, job := range loaded { // LoadJobs sorts by id
		rec, err := readJobRecordFile(homeFD, job.ID(), now)
		if err != nil {
			return wire.JobListResult{}, bad, err
		}
		res.Jobs = append(res.Jobs, jobInfoOf(job, rec, now))
	}
	return res, bad, nil
}

// readJobRecordFile reads broker/jobs/<id>.json strictly, or makes the
// record brokerd would make on first sight (first seen now).
func readJobRecordFile(homeFD int, id string, now time.Time) (jobRecordFile, error) {
	name := "broker/jobs/" + id + ".json"
	f, err := openBeneath(homeFD, name, 0)
	if errors.Is(err, unix.ENOENT) {
		seen, err := wire.TimestampOf(now)
		return jobRecordFile{Job: id, FirstSeen: seen}, err
	}
	if err != nil {
		return jobRecordFile{}, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return jobRecordFile{}, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJobRecord))
	if err != nil {
		return jobRecordFile{}, err
	}
	var rec jobRecordFile
	if err := wire.Unmarshal(data, &rec); err != nil {
		return jobRecordFile{}, fmt.Errorf("%s: %w", name, err)
	}
	if rec.Job != id {
		return jobRecordFile{}, fmt.Errorf("%s: the record is of job %q", name, rec.Job)
	}
	for i := range rec.Runs {
		run := &rec.Runs[i]
		if run.Outcome == wire.RunRunning && !now.Before(run.Deadline.Time()) {
			ended := run.Deadline
			run.Ended, run.Outcome, run.Detail = &ended, wire.RunInterrupted, "no end was reported by the run's deadline (max_turn)"
		}
	}
	return rec, nil
}

// jobInfoOf is brokerd's info for a job and its record: Next is a due time
// not yet started while it may still start, else the next due time.
func jobInfoOf(job jobs.Job, rec jobRecordFile, now time.Time) wire.JobInfo {
	info := wire.JobInfo{Job: job.ID(), Schedule: job.Schedule(), Deliver: job.Deliver().String(),
		MaxTurn: jobs.DurationText(job.TurnLimit()), CatchUp: job.CatchUp()}
	if z := job.Zone(); z != nil {
		info.TimeZone = z.String()
	}
	firstSeen := rec.FirstSeen.Time()
	after := laterOf(firstSeen, now.Add(-jobDueGrace))
	if rec.LastDue != nil {
		after = laterOf(after, rec.LastDue.Time())
	}
	next, due := job.Last(firstSeen, after, now)
	if !due {
		next = job.Next(firstSeen, now)
	}
	if !next.IsZero() {
		if n, err := wire.TimestampOf(next); err == nil {
			info.Next = &n
		}
	}
	if len(rec.Runs) > 0 {
		last := rec.Runs[len(rec.Runs)-1]
		info.Last = &last
	}
	return info
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

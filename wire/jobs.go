package wire

import "fmt"

// The kinds of scheduled jobs (DESIGN.md section 13). brokerd alone decides
// when a job may run and mints its session; loopd runs it and says how it
// ended; the owner lists, shows and triggers jobs; gatewayd carries a run's
// reply to Mattermost. Which socket may carry which kind is the listeners'
// table:
//   - loopd to brokerd: job_list, job_start (job_started or job_refused),
//     job_done (job_recorded).
//   - the owner to brokerd: job_list, job_show (job_show_result or
//     job_refused), job_run (job_triggered or job_refused): the owner's
//     trigger, which loopd's next job_start may claim.
//   - the owner to loopd: job_run (job_started or job_refused): start the
//     run brokerd was told of now, rather than at loopd's next look.
//   - gatewayd to loopd: job_deliveries, answered by job_delivery frames
//     (never final) for as long as the connection lasts.
//   - brokerd to gatewayd: job_ended (job_ended_noted), brokerd's word that
//     a run it minted ended and where its reply goes; gatewayd posts a
//     job_delivery only for such a run, once.
// Job ids are strings here; brokerd and loopd check them as policy does.

// RunTrigger says why a run started: its schedule came due, it was missed
// while boxmaker was down and the job catches up, or the owner asked.
type RunTrigger string

const (
	TriggerSchedule RunTrigger = "schedule"
	TriggerCatchUp  RunTrigger = "catch_up"
	TriggerOwner    RunTrigger = "owner"
)

var runTriggers = []RunTrigger{TriggerSchedule, TriggerCatchUp, TriggerOwner}

func (r RunTrigger) MarshalText() ([]byte, error) {
	if err := checkEnum(string(r), runTriggers); err != nil {
		return nil, fmt.Errorf("run trigger: %w", err)
	}
	return []byte(r), nil
}

func (r *RunTrigger) UnmarshalText(b []byte) error {
	if err := checkEnum(string(b), runTriggers); err != nil {
		return fmt.Errorf("run trigger: %w", err)
	}
	*r = RunTrigger(b)
	return nil
}

// RunOutcome is how a run stands: running until loopd reports its end, or
// interrupted when loopd or brokerd stopped before it ended.
type RunOutcome string

const (
	RunRunning     RunOutcome = "running"
	RunOK          RunOutcome = "ok"
	RunFailed      RunOutcome = "failed"
	RunInterrupted RunOutcome = "interrupted"
)

var runOutcomes = []RunOutcome{RunRunning, RunOK, RunFailed, RunInterrupted}

func (r RunOutcome) MarshalText() ([]byte, error) {
	if err := checkEnum(string(r), runOutcomes); err != nil {
		return nil, fmt.Errorf("run outcome: %w", err)
	}
	return []byte(r), nil
}

func (r *RunOutcome) UnmarshalText(b []byte) error {
	if err := checkEnum(string(b), runOutcomes); err != nil {
		return fmt.Errorf("run outcome: %w", err)
	}
	*r = RunOutcome(b)
	return nil
}

// JobStart asks brokerd for a session in which to run a job now.
type JobStart struct {
	Job     string     `json:"job"`
	Trigger RunTrigger `json:"trigger"`
}

// JobStarted is the session brokerd minted for one run. Scheduled is the
// due time the run stands for (the owner's trigger time for an owner's
// run); the job's grants apply in the session until Deadline, the end of
// its max_turn.
type JobStarted struct {
	Job       string     `json:"job"`
	Session   SessionID  `json:"session"`
	Trigger   RunTrigger `json:"trigger"`
	Scheduled Timestamp  `json:"scheduled"`
	Deadline  Timestamp  `json:"deadline"`
}

// JobRefused says why a job request was not done: no such job, not due,
// already started for that time, still running.
type JobRefused struct {
	Job    string `json:"job"`
	Reason string `json:"reason"`
}

// JobDone is loopd's word on how a run ended: ok, failed (Detail says
// why) or interrupted.
type JobDone struct {
	Session SessionID  `json:"session"`
	Outcome RunOutcome `json:"outcome"`
	Detail  string     `json:"detail"`
}

// JobRecorded is the run's outcome as brokerd now holds it: what JobDone
// said, or interrupted when the run had ended before it came.
type JobRecorded struct {
	Session SessionID  `json:"session"`
	Outcome RunOutcome `json:"outcome"`
}

// JobList asks for every job brokerd can run.
type JobList struct{}

// JobListResult lists them by id.
type JobListResult struct {
	Jobs []JobInfo `json:"jobs"`
}

// JobInfo is one job as brokerd sees it: its file's schedule, when it next
// runs (null: never), an owner's trigger that no run has claimed yet, and
// its latest run.
type JobInfo struct {
	Job       string     `json:"job"`
	Schedule  string     `json:"schedule"`
	TimeZone  string     `json:"time_zone"` // "" for an every job, or the host's zone
	Deliver   string     `json:"deliver"`
	MaxTurn   string     `json:"max_turn"` // in force: the file's, or the default
	CatchUp   bool       `json:"catch_up"`
	Next      *Timestamp `json:"next"`
	Triggered *Timestamp `json:"triggered"`
	Last      *JobRun    `json:"last"`
}

// JobRun is one run brokerd minted a session for.
type JobRun struct {
	Session   SessionID  `json:"session"`
	Trigger   RunTrigger `json:"trigger"`
	Scheduled Timestamp  `json:"scheduled"`
	Started   Timestamp  `json:"started"`
	Deadline  Timestamp  `json:"deadline"`
	Ended     *Timestamp `json:"ended"`
	Outcome   RunOutcome `json:"outcome"`
	Detail    string     `json:"detail"`
}

// JobShow asks for one job with its prompt and recent runs.
type JobShow struct {
	Job string `json:"job"`
}

// JobShowResult is the job, its prompt, and its runs, newest first.
type JobShowResult struct {
	Job    JobInfo  `json:"job"`
	Prompt string   `json:"prompt"`
	Runs   []JobRun `json:"runs"`
}

// JobRunNow (job_run) asks for a run of a job now: to brokerd, the owner's trigger; to
// loopd, the request to claim it at once.
type JobRunNow struct {
	Job string `json:"job"`
}

// JobTriggered says brokerd holds the owner's trigger, made at At, until a
// run claims it or it expires.
type JobTriggered struct {
	Job     string    `json:"job"`
	At      Timestamp `json:"at"`
	Expires Timestamp `json:"expires"`
}

// JobDeliveries subscribes gatewayd to the replies of jobs that deliver
// to Mattermost.
type JobDeliveries struct{}

// JobDelivery is one run's reply (or failure) for gatewayd to post where
// To says ("mattermost" or "mattermost:<channel id>"), marked as the job's.
// TimeZone names the zone Scheduled is shown in ("" for UTC).
type JobDelivery struct {
	Job       string     `json:"job"`
	Session   SessionID  `json:"session"`
	Trigger   RunTrigger `json:"trigger"`
	Scheduled Timestamp  `json:"scheduled"`
	TimeZone  string     `json:"time_zone"`
	To        string     `json:"to"`
	Outcome   RunOutcome `json:"outcome"`
	Content   string     `json:"content"`
}

// JobEnded is brokerd's record of a run it minted that has ended and whose
// job delivers to Mattermost: the job, trigger and due time of the run,
// the zone its time is shown in, where the job file says its reply goes
// (To, as JobDelivery's) and how it ended. gatewayd posts loopd's reply
// for the session only after this, once, under these fields rather than
// loopd's: loopd alone cannot make gatewayd post a job's message.
type JobEnded struct {
	Job       string     `json:"job"`
	Session   SessionID  `json:"session"`
	Trigger   RunTrigger `json:"trigger"`
	Scheduled Timestamp  `json:"scheduled"`
	TimeZone  string     `json:"time_zone"`
	To        string     `json:"to"`
	Outcome   RunOutcome `json:"outcome"`
}

// JobEndedNoted says gatewayd holds brokerd's word for the session.
type JobEndedNoted struct {
	Session SessionID `json:"session"`
}

func (JobStart) isMessage()      {}
func (JobStarted) isMessage()    {}
func (JobRefused) isMessage()    {}
func (JobDone) isMessage()       {}
func (JobRecorded) isMessage()   {}
func (JobList) isMessage()       {}
func (JobListResult) isMessage() {}
func (JobShow) isMessage()       {}
func (JobShowResult) isMessage() {}
func (JobRunNow) isMessage()     {}
func (JobTriggered) isMessage()  {}
func (JobDeliveries) isMessage() {}
func (JobDelivery) isMessage()   {}
func (JobEnded) isMessage()      {}
func (JobEndedNoted) isMessage() {}

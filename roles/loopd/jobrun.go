package loopd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"boxmaker/policy/jobs"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// runJob runs one run brokerd minted: the job's prompt as the first message
// of the fresh session, within the job's max_turn, like any chat turn (its
// tool calls go to brokerd, which decides them with the job's grants, and
// an ask waits for the owner as in any session). Then it tells brokerd how
// the run ended and hands the reply to gatewayd when the job delivers to
// Mattermost.
func (l *loopd) runJob(ctx context.Context, job jobs.Job, run wire.JobStarted) {
	l.log.Printf("job %s: %s run for %s in session %s", job.ID(), run.Trigger, run.Scheduled, run.Session)
	limit := job.TurnLimit()
	turnCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	session := run.Session
	res, err := l.chat(turnCtx, wire.ChatSend{Session: &session, Content: job.Prompt()}, &events{reply: l.jobEvents(run)}, true)
	outcome, detail := wire.RunOK, ""
	switch {
	case err != nil && ctx.Err() != nil:
		outcome, detail = wire.RunInterrupted, "loopd stopped during the run"
	case err != nil && errors.Is(turnCtx.Err(), context.DeadlineExceeded):
		outcome, detail = wire.RunFailed, fmt.Sprintf("the run did not finish within max_turn (%s)", jobs.DurationText(limit))
	case err != nil:
		outcome, detail = wire.RunFailed, err.Error()
	}
	l.log.Printf("job %s: session %s ended %s %s", job.ID(), session, outcome, detail)
	// The report and the delivery outlive a stopping loopd by a little, so
	// that brokerd hears of the interruption now rather than at the deadline.
	reportCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	l.reportDone(reportCtx, session, outcome, detail)
	if job.Deliver().Kind() == jobs.DeliverLog || outcome == wire.RunInterrupted {
		return
	}
	content := res.content
	if outcome != wire.RunOK {
		content = detail
	}
	l.deliveries.add(wire.JobDelivery{Job: job.ID(), Session: session, Trigger: run.Trigger, Scheduled: run.Scheduled,
		TimeZone: zoneName(job), To: job.Deliver().String(), Outcome: outcome, Content: content})
}

// jobEvents is where a run's chat events go: nobody watches a run as it
// happens, so only what the owner may need is logged (a pending approval:
// the owner answers it on Mattermost or with `boxmaker approvals`).
func (l *loopd) jobEvents(run wire.JobStarted) sock.Replier {
	return func(e wire.Envelope) error {
		if p, ok := e.Msg.(wire.ApprovalPendingEvent); ok {
			l.log.Printf("job %s: session %s call %d waits for the owner's approval %s until %s", run.Job, run.Session, p.Call, p.Approval, p.Expires)
		}
		return nil
	}
}

// reportDone sends job_done; a failure is logged, and brokerd ends the run
// as interrupted at its deadline anyway.
func (l *loopd) reportDone(ctx context.Context, session wire.SessionID, outcome wire.RunOutcome, detail string) {
	res, err := l.brokerCall(ctx, wire.JobDone{Session: session, Outcome: outcome, Detail: detail})
	if _, ok := res.(wire.JobRecorded); err != nil || !ok {
		l.log.Printf("session %s: brokerd did not record the run's end: %v", session, errOr(err, res))
	}
}

// zoneName names the zone a job's times are shown in: "" for an every job
// (shown in UTC), "Local" for the host's zone, else the IANA name.
func zoneName(job jobs.Job) string {
	if z := job.Zone(); z != nil {
		return z.String()
	}
	return ""
}

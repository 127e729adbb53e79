package brokerd

import (
	"context"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// A job's reply reaches Mattermost through loopd and gatewayd, but only for
// a run brokerd minted and knows has ended (issue 23, finding 9): when
// loopd's job_done finds such a run, of a job that delivers to Mattermost,
// brokerd tells gatewayd so on gateway.sock (job_ended) with the run's
// job, trigger, due time and destination as its own record and the job
// file say. gatewayd posts loopd's job_delivery for that session only
// after this word, once, under brokerd's fields. brokerd tells of each run
// once per process, so loopd repeating job_done buys nothing.

const (
	// jobEndedFirstTry bounds the first telling, made before loopd's
	// job_done is answered, so that the word is with gatewayd before
	// loopd hands over the reply (loopd gives job_done 5 s).
	jobEndedFirstTry = 2 * time.Second
	// jobEndedRetryFor is how long brokerd goes on telling a gatewayd
	// that was down; gatewayd holds a delivery for a while only.
	jobEndedRetryFor = 10 * time.Minute
)

// tellJobEnded tells gatewayd of session's run when it has ended, delivers
// to Mattermost and was not told of before; a first try now, then in the
// background with backoff while gatewayd is down.
func (b *broker) tellJobEnded(session wire.SessionID) {
	if !b.gateway {
		return
	}
	end, ok := b.jobRuns.Ended(session, b.loadJobs())
	if !ok {
		return
	}
	path := b.dial.gateway
	ctx, cancel := context.WithTimeout(context.Background(), jobEndedFirstTry)
	err := sendJobEnded(ctx, path, end)
	cancel()
	if err == nil {
		b.log.Printf("session %s: told gatewayd the run ended, for its reply to %s", session, end.To)
		return
	}
	b.log.Printf("session %s: gatewayd was not told the run ended (%v); trying again for %s", session, err, jobEndedRetryFor)
	go b.retryJobEnded(path, end)
}

func (b *broker) retryJobEnded(path string, end wire.JobEnded) {
	backoff := 250 * time.Millisecond
	for give := time.Now().Add(jobEndedRetryFor); time.Now().Before(give); backoff = min(backoff*2, 30*time.Second) {
		time.Sleep(backoff)
		ctx, cancel := context.WithTimeout(context.Background(), jobEndedFirstTry)
		err := sendJobEnded(ctx, path, end)
		cancel()
		if err == nil {
			b.log.Printf("session %s: told gatewayd the run ended, for its reply to %s", end.Session, end.To)
			return
		}
	}
	b.log.Printf("session %s: gatewayd could not be told the run ended; its reply is in the session log only", end.Session)
}

func sendJobEnded(ctx context.Context, path string, end wire.JobEnded) error {
	c, err := sock.Dial(path)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Call(ctx, end, nil)
	if err != nil {
		return err
	}
	if noted, ok := res.(wire.JobEndedNoted); !ok || noted.Session != end.Session {
		return errUnexpected(res)
	}
	return nil
}

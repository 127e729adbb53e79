package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// brokerd's word on ended runs (issue 23, finding 9). loopd hands over a
// job's reply, but loopd alone must not be able to make gatewayd post a
// "Job ..." message: gatewayd posts a job_delivery only for a session
// whose run brokerd, on gateway.sock, said it minted and has ended
// (job_ended), once, and under brokerd's job, trigger, time, destination
// and outcome. Only the content is loopd's, as a run's reply always is.

const (
	// maxJobEnds bounds the words held for replies that have not come.
	maxJobEnds = 256
	// jobEndKeep is how long a word waits for loopd's reply.
	jobEndKeep = time.Hour
	// defaultJobEndWait is how long a reply waits for brokerd's word,
	// which brokerd gives before it answers loopd's job_done, or, when
	// gatewayd was down, retries.
	defaultJobEndWait = time.Minute
)

// jobEnds holds brokerd's words until the reply of each comes; each is
// taken once, and a session once posted is never posted again.
type jobEnds struct {
	mu      sync.Mutex
	ends    map[string]jobEnd // by session
	changed chan struct{}     // closed when a word comes; then made anew
	posted  *seenSet
}

type jobEnd struct {
	wire.JobEnded
	at time.Time
}

func newJobEnds() *jobEnds {
	return &jobEnds{ends: map[string]jobEnd{}, changed: make(chan struct{}), posted: newSeenSet(4096)}
}

// checkJobEnded refuses a word gatewayd would not post under.
func checkJobEnded(e wire.JobEnded) error {
	switch {
	case !strings.HasPrefix(e.Session.String(), "job-"):
		return fmt.Errorf("session %s is no job's", e.Session)
	case e.Outcome == wire.RunRunning:
		return errors.New("a run still running has not ended")
	case e.To != "mattermost" && !strings.HasPrefix(e.To, "mattermost:"):
		return fmt.Errorf("%q is no Mattermost destination", e.To)
	}
	return nil
}

// note keeps e, dropping words older than jobEndKeep and, past the bound,
// the oldest.
func (j *jobEnds) note(e wire.JobEnded, now time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for s, old := range j.ends {
		if now.Sub(old.at) > jobEndKeep {
			delete(j.ends, s)
		}
	}
	if len(j.ends) >= maxJobEnds {
		oldest := ""
		for s, old := range j.ends {
			if oldest == "" || old.at.Before(j.ends[oldest].at) {
				oldest = s
			}
		}
		delete(j.ends, oldest)
	}
	j.ends[e.Session.String()] = jobEnd{JobEnded: e, at: now}
	close(j.changed)
	j.changed = make(chan struct{})
}

// take returns brokerd's word for session, waiting up to wait for it, and
// forgets it: a session's reply is posted at most once.
func (j *jobEnds) take(ctx context.Context, session wire.SessionID, wait time.Duration) (wire.JobEnded, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		j.mu.Lock()
		e, ok := j.ends[session.String()]
		delete(j.ends, session.String())
		changed := j.changed
		j.mu.Unlock()
		if ok {
			return e.JobEnded, j.posted.Add(session.String())
		}
		select {
		case <-changed:
		case <-timer.C:
			return wire.JobEnded{}, false
		case <-ctx.Done():
			return wire.JobEnded{}, false
		}
	}
}

// answerJobEnded takes brokerd's job_ended on gateway.sock.
func (g *gateway) answerJobEnded(e wire.JobEnded, reply sock.Replier) error {
	if err := checkJobEnded(e); err != nil {
		return sock.Refusal{Code: wire.BadMessage, Detail: err.Error()}
	}
	g.jobEnds.note(e, time.Now())
	g.log.Printf("job %s: brokerd says session %s ended %s; its reply goes to %s", oneLine(e.Job, 64), e.Session, e.Outcome, e.To)
	return reply(wire.Envelope{Final: true, Msg: wire.JobEndedNoted{Session: e.Session}})
}

// asBrokerdSays is loopd's delivery under brokerd's word: only the content
// stays loopd's.
func asBrokerdSays(d wire.JobDelivery, e wire.JobEnded) wire.JobDelivery {
	return wire.JobDelivery{Job: e.Job, Session: e.Session, Trigger: e.Trigger, Scheduled: e.Scheduled,
		TimeZone: e.TimeZone, To: e.To, Outcome: e.Outcome, Content: d.Content}
}

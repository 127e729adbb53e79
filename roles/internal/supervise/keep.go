package supervise

import (
	"context"
	"fmt"
	"time"
)

// The backoff of a role that died: doubled at each death, from the first
// to the last; a role that runs for the budget's window starts over.
const (
	firstBackoff = 250 * time.Millisecond
	lastBackoff  = 30 * time.Second
)

// budget is one role's restart budget: how often it died since a run of it
// last lasted the window. Each role has its own, so a role that keeps
// dying never takes the others down with it.
type budget struct {
	max         int
	window      time.Duration
	failedRetry time.Duration
	deaths      int
	backoff     time.Duration
}

// died counts a death after a run that lasted ran, and says how long to
// wait before the next start and whether the role is failed: it died more
// than max times without a run that lasted the window. A failed role is
// tried again every failedRetry, and stays failed until a run lasts.
func (b *budget) died(ran time.Duration) (time.Duration, bool) {
	if ran >= b.window {
		b.deaths, b.backoff = 0, 0
	}
	b.deaths++
	if b.deaths > b.max {
		return b.failedRetry, true
	}
	b.backoff = min(max(b.backoff*2, firstBackoff), lastBackoff)
	return b.backoff, false
}

// keep runs d until ctx ends, restarting it when it dies. The first start's
// outcome goes to started; when it fails, keep returns.
func (s *supervisor) keep(ctx context.Context, d Daemon, started chan<- error) {
	b := &budget{max: s.opts.MaxRestarts, window: s.opts.Window, failedRetry: s.opts.FailedRetry}
	defer s.forget(d.Name)
	first := true
	for {
		since := time.Now()
		var readyErr error
		last, err := s.runOnce(ctx, d, func(e error) {
			readyErr = e
			if first {
				started <- e
			}
		})
		if first {
			first = false
			if readyErr != nil {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if !s.wait(ctx, d, b, err, last, time.Since(since)) {
			return
		}
	}
}

// wait records d's death, says so, and waits out its backoff; false when
// ctx ended meanwhile.
func (s *supervisor) wait(ctx context.Context, d Daemon, b *budget, err error, last string, ran time.Duration) bool {
	pause, failed := b.died(ran)
	reason := err.Error()
	if last != "" {
		reason += "; its last line: " + last
	}
	st := Status{State: StateRestarting, Reason: reason, Retry: time.Now().Add(pause).Format(time.RFC3339)}
	if failed {
		st.State = StateFailed
		reason = fmt.Sprintf("died %d times without running for %s (last: %s)", b.deaths, b.window, reason)
		st.Reason = reason
		s.logf("%s failed: %s; the other roles go on; trying it again in %s", d.Name, reason, pause)
	} else {
		s.logf("%s exited (%s); restarting in %s", d.Name, reason, pause)
	}
	s.setState(d, st)
	select {
	case <-time.After(pause):
		return true
	case <-ctx.Done():
		return false
	}
}

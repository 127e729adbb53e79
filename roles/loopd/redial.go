package loopd

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// redialFor is how long loopd keeps dialling brokerd or inferproxy while
// nobody listens before the call fails. A role that died is restarted by
// `boxmaker up` (or systemd) within a second or two; a turn that meets that
// moment waits for it rather than fail at once, and a role that stays down
// still fails the turn while the owner waits for it.
const (
	redialFor   = 10 * time.Second
	redialEvery = 100 * time.Millisecond
)

// redial calls dial until it connects, fails for a reason other than an
// absent listener, ctx ends, or redialFor has passed. It never repeats a
// request, only the connect, so nothing is ever sent twice.
func redial[C any](ctx context.Context, dial func(context.Context) (C, error)) (C, error) {
	deadline := time.Now().Add(redialFor)
	for {
		c, err := dial(ctx)
		if err == nil || !listenerAbsent(err) || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return c, err
		case <-time.After(redialEvery):
		}
	}
}

// listenerAbsent reports whether a dial failed because nobody listens on
// the socket now: no socket file yet, a stale one nobody accepts on, or a
// backlog full for the moment.
func listenerAbsent(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EAGAIN)
}

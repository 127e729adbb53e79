package sock

import (
	"context"
	"sync"
	"time"
)

// A watchman starts the background watch (connReader.watch) of each of a
// Server's handlers that has run for a full tick, so a hangup cancels it
// between one and two ticks after it ran that long. Most handlers answer
// well within a tick (a tool_list or a denied call take well under a
// millisecond), and they pay only for a map entry: a watch per request
// cost a goroutine, the wakeup of another thread to run it and four
// deadline changes, more CPU than the request itself, and a timer per
// request woke the network poller as often. The watchman's own ticker runs
// only while handlers start, and it sleeps once a tick passed with none.
//
// A handler that finishes within its first tick is not cancelled by a
// hangup; it could not have been sooner either, since a handler looks at
// its context only where it waits, and a reply to a peer that left is
// simply lost.
type watchman struct {
	tick time.Duration

	mu      sync.Mutex
	running map[*connReader]time.Time // unwatched handlers, by when they began
	begun   bool                      // a handler began since the last tick
	asleep  bool                      // no ticker runs: begin must send wake
	wake    chan struct{}
}

// The states of a connReader's watch.
const (
	watchDue     = iota // the handler runs unwatched; the watchman may start the watch
	watchStarted        // the watchman started it: end must stop it
	watchEnded          // end came first: the watch never starts
)

func newWatchman(tick time.Duration) *watchman {
	return &watchman{tick: tick, running: map[*connReader]time.Time{}, asleep: true, wake: make(chan struct{}, 1)}
}

// begin registers the handler about to run on cr, whose context cancel
// ends.
func (w *watchman) begin(cr *connReader, cancel context.CancelCauseFunc) {
	cr.cancel = cancel
	cr.state.Store(watchDue)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running[cr] = time.Now()
	w.begun = true
	if w.asleep {
		w.asleep = false
		w.wake <- struct{}{} // never blocks: only the one who clears asleep sends
	}
}

// end is called when the handler on cr returned: it keeps the watch from
// starting or, if it started, stops it and waits for it.
//
// WARNING: end must return before the next Read on cr, or the watch and
// the serve loop would race for the connection's bytes; Server.answer calls
// it before it returns. TestPipelinedFrameIsKept,
// TestPeerHangupCancelsHandler and TestWatchStartingAsHandlersEnd prove it.
func (w *watchman) end(cr *connReader) {
	if cr.state.CompareAndSwap(watchDue, watchEnded) {
		w.mu.Lock()
		delete(w.running, cr)
		w.mu.Unlock()
		return
	}
	cr.stopWatch()
}

// run ticks while handlers begin and starts the watches that are due,
// until ctx ends.
func (w *watchman) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		w.patrol(ctx)
	}
}

// patrol ticks until a tick finds no handler running and none begun.
func (w *watchman) patrol(ctx context.Context) {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if !w.startDue(now) {
				return
			}
		}
	}
}

// startDue starts the watch of each handler that has run for a tick, and
// reports whether the watchman stays awake.
func (w *watchman) startDue(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for cr, began := range w.running {
		if now.Sub(began) < w.tick {
			continue
		}
		delete(w.running, cr)
		cr.done = make(chan struct{})
		if cr.state.CompareAndSwap(watchDue, watchStarted) {
			go cr.watch()
		}
	}
	if len(w.running) == 0 && !w.begun {
		w.asleep = true
		return false
	}
	w.begun = false
	return true
}

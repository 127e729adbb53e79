package loopd

import (
	"context"
	"sync"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// deliveries holds the replies of job runs that go to Mattermost until
// gatewayd takes them. gatewayd is the only role that talks to Mattermost,
// and it dials loopd (never the reverse), so it subscribes with
// job_deliveries on its own socket and loopd answers with one job_delivery
// frame per reply, for as long as the connection lasts. gatewayd posts a
// reply only for a run brokerd told it ended (job_ended), under brokerd's
// fields: what loopd says of a run beyond its reply's text counts for
// nothing there.
//
// The queue is memory only and bounded: a reply not taken before loopd
// stops, or past the bound, stays in the session log only, which is where
// every reply is anyway.
type deliveries struct {
	log func(format string, v ...any)

	mu    sync.Mutex
	queue []wire.JobDelivery
	added chan struct{} // closed when the queue grows; then made anew
}

// maxQueuedDeliveries bounds the replies waiting for gatewayd.
const maxQueuedDeliveries = 64

func newDeliveries(logf func(string, ...any)) *deliveries {
	return &deliveries{log: logf, added: make(chan struct{})}
}

// add queues one reply, dropping the oldest past the bound.
func (d *deliveries) add(x wire.JobDelivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queue) == maxQueuedDeliveries {
		d.log("job %s: the reply of session %s was not taken by gatewayd in time; it is in the session log only", d.queue[0].Job, d.queue[0].Session)
		d.queue = d.queue[1:]
	}
	d.queue = append(d.queue, x)
	close(d.added)
	d.added = make(chan struct{})
}

// take removes the oldest reply, waiting for one until ctx ends.
func (d *deliveries) take(ctx context.Context) (wire.JobDelivery, bool) {
	for {
		d.mu.Lock()
		if len(d.queue) > 0 {
			x := d.queue[0]
			d.queue = d.queue[1:]
			d.mu.Unlock()
			return x, true
		}
		added := d.added
		d.mu.Unlock()
		select {
		case <-added:
		case <-ctx.Done():
			return wire.JobDelivery{}, false
		}
	}
}

// putBack returns a reply whose frame could not be sent, to the front.
func (d *deliveries) putBack(x wire.JobDelivery) {
	d.mu.Lock()
	d.queue = append([]wire.JobDelivery{x}, d.queue...)
	d.mu.Unlock()
}

// serve answers job_deliveries: each reply as a job_delivery frame (never
// final) until the subscriber leaves or loopd stops.
func (d *deliveries) serve(ctx context.Context, reply sock.Replier) error {
	for {
		x, ok := d.take(ctx)
		if !ok {
			return context.Cause(ctx)
		}
		if err := reply(wire.Envelope{Final: false, Msg: x}); err != nil {
			d.putBack(x)
			return err
		}
		d.log("job %s: the reply of session %s went to gatewayd", x.Job, x.Session)
	}
}

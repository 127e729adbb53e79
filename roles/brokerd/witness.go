package brokerd

import (
	"context"
	"log"
	"sync"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// maxWitnessQueue bounds the checkpoints kept while witnessd cannot be
// reached. Each extends the one before it, so when the queue is full the
// oldest is dropped: the newest alone tells the witness everything the
// dropped ones did about the head, and only the witness's record of the
// intermediate heads grows thinner.
const maxWitnessQueue = 64

// witnessClient hands each checkpoint brokerd signs to witnessd, in order,
// over run/brokerd-witnessd/witness.sock. brokerd never waits for it: when
// the witness is down, checkpoints queue and brokerd goes on serving;
// `boxmaker status` shows how far the witness lags.
type witnessClient struct {
	path string
	log  *log.Logger
	key  string // the verifier key of brokerd's checkpoint key, set by openAudit

	mu    sync.Mutex
	queue []string // signed notes, oldest first
	down  bool     // the witness could not be reached; logged once per outage
	wake  chan struct{}
	send  sync.Mutex // one sender at a time: the loop, or flush at the stop
}

func newWitnessClient(path string, log *log.Logger) *witnessClient {
	return &witnessClient{path: path, log: log, wake: make(chan struct{}, 1)}
}

// signed queues a checkpoint the audit Writer just made durable; it never
// blocks (audit.CheckpointConfig.Signed).
func (c *witnessClient) signed(_ audit.Checkpoint, note string) {
	c.mu.Lock()
	if len(c.queue) == maxWitnessQueue {
		c.queue = c.queue[1:]
	}
	c.queue = append(c.queue, note)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run sends what is queued whenever a checkpoint comes, and tries again
// with backoff while the witness cannot be reached, until ctx ends.
func (c *witnessClient) run(ctx context.Context) {
	backoff := 250 * time.Millisecond
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-retry:
		}
		if err := c.sendQueued(ctx); err != nil && ctx.Err() == nil {
			retry = time.After(backoff)
			backoff = min(backoff*2, 30*time.Second)
			continue
		}
		retry, backoff = nil, 250*time.Millisecond
	}
}

// flush tries, for at most d, to hand the witness what is still queued:
// the checkpoint of a clean stop is signed after the loop ended.
func (c *witnessClient) flush(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := c.sendQueued(ctx); err != nil {
		c.mu.Lock()
		n := len(c.queue)
		c.mu.Unlock()
		c.log.Printf("stopping with %d checkpoints the witness has not taken: %v", n, err)
	}
}

// sendQueued sends the queued checkpoints, oldest first, on one
// connection. A checkpoint the witness refuses is logged and dropped: it
// will not take it later either.
func (c *witnessClient) sendQueued(ctx context.Context) error {
	c.send.Lock()
	defer c.send.Unlock()
	var conn *sock.Client
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			return nil
		}
		note := c.queue[0]
		c.mu.Unlock()
		var err error
		if conn == nil {
			conn, err = sock.Dial(c.path)
		}
		var res wire.Message
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			res, err = conn.Call(cctx, wire.CheckpointSubmit{Key: c.key, Note: note}, nil)
			cancel()
		}
		if err != nil {
			c.unreachable(err)
			return err
		}
		c.answered(res)
		c.mu.Lock()
		if len(c.queue) > 0 && c.queue[0] == note {
			c.queue = c.queue[1:]
		}
		c.mu.Unlock()
	}
}

func (c *witnessClient) unreachable(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.down {
		c.log.Printf("the audit witness cannot be reached (%v); serving on, keeping up to %d checkpoints for it", err, maxWitnessQueue)
	}
	c.down = true
}

// answered logs what matters of the witness's answer: that it is back, or
// that it refused a checkpoint, which is what an attack on the log, or a
// key or chain the owner replaced, looks like.
func (c *witnessClient) answered(res wire.Message) {
	c.mu.Lock()
	back := c.down
	c.down = false
	c.mu.Unlock()
	switch r := res.(type) {
	case wire.CheckpointWitnessed:
		if back {
			c.log.Printf("the audit witness is back and holds seq %d", r.Seq)
		}
	case wire.CheckpointRefused:
		c.log.Printf("the audit witness REFUSED a checkpoint (it holds seq %d): %q", r.Held, r.Reason)
	default:
		c.log.Printf("the audit witness answered %s", wire.KindOf(res))
	}
}

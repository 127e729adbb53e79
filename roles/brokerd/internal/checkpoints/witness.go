package checkpoints

import (
	"context"
	"encoding/base64"
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

// Witness hands each checkpoint brokerd signs to witnessd, in order,
// over run/brokerd-witnessd/witness.sock. brokerd never waits for it: when
// the witness is down, checkpoints queue and brokerd goes on serving;
// `boxmaker status` shows how far the witness lags.
type Witness struct {
	path string
	log  *log.Logger
	key  string        // the verifier key of brokerd's checkpoint key, set by Open
	tree *audit.Writer // gives the consistency proofs, set by Open

	mu    sync.Mutex
	queue []queued // signed checkpoints, oldest first
	held  uint64   // the size the witness last said it holds
	down  bool     // the witness could not be reached; logged once per outage
	wake  chan struct{}
	send  sync.Mutex // one sender at a time: the loop, or flush at the stop
}

// NewWitness is the client of the witness that listens on path; Run sends
// what the checkpoints of Open queue.
func NewWitness(path string, log *log.Logger) *Witness {
	return &Witness{path: path, log: log, wake: make(chan struct{}, 1)}
}

// queued is one checkpoint waiting for the witness.
type queued struct {
	size uint64
	note string
}

// signed queues a checkpoint the audit Writer just made durable; it never
// blocks (audit.CheckpointConfig.Signed).
func (c *Witness) signed(cp audit.Checkpoint, note string) {
	c.mu.Lock()
	if len(c.queue) == maxWitnessQueue {
		c.queue = c.queue[1:]
	}
	c.queue = append(c.queue, queued{size: cp.Seq, note: note})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run sends what is queued whenever a checkpoint comes, and tries again
// with backoff while the witness cannot be reached, until ctx ends.
func (c *Witness) Run(ctx context.Context) {
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

// Flush tries, for at most d, to hand the witness what is still queued:
// the checkpoint of a clean stop is signed after the loop ended.
func (c *Witness) Flush(d time.Duration) {
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
// connection, each with the consistency proof from the size the witness
// holds (C2SP tlog-witness). When the witness holds another size than
// brokerd thought (its first answer after a start, say), it says which,
// and the checkpoint goes again once with the proof from there. A
// checkpoint the witness refuses otherwise is logged and dropped: it will
// not take it later either.
func (c *Witness) sendQueued(ctx context.Context) error {
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
		next := c.queue[0]
		c.mu.Unlock()
		var err error
		if conn == nil {
			conn, err = sock.Dial(c.path)
		}
		if err == nil {
			err = c.add(ctx, conn, next)
		}
		if err != nil {
			c.unreachable(err)
			return err
		}
		c.mu.Lock()
		if len(c.queue) > 0 && c.queue[0] == next {
			c.queue = c.queue[1:]
		}
		c.mu.Unlock()
	}
}

// add hands one checkpoint to the witness, once more when the witness
// answers that it holds another size than the proof started from.
func (c *Witness) add(ctx context.Context, conn *sock.Client, q queued) error {
	for try := 0; try < 2; try++ {
		c.mu.Lock()
		old := c.held
		c.mu.Unlock()
		if old > q.size {
			// The witness holds a bigger tree than this checkpoint's: the
			// log brokerd signs is shorter than what was witnessed (cut
			// short, or replaced), or this one was queued behind a newer.
			if c.newest() <= old {
				c.log.Printf("the audit witness holds a tree of %d records, more than this checkpoint's %d: the log is shorter than what was witnessed; run boxmaker audit verify", old, q.size)
			}
			return nil
		}
		req, err := c.request(q, old)
		if err != nil {
			c.log.Printf("no consistency proof for the witness from size %d to %d: %v", old, q.size, err)
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := conn.Call(cctx, req, nil)
		cancel()
		if err != nil {
			return err
		}
		if r, ok := res.(wire.CheckpointRefused); ok && r.Held != old && try == 0 {
			c.mu.Lock()
			c.held = r.Held
			c.mu.Unlock()
			continue
		}
		c.answered(res)
		return nil
	}
	return nil
}

// newest is the size of the newest checkpoint queued, 0 with none.
func (c *Witness) newest() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return 0
	}
	return c.queue[len(c.queue)-1].size
}

// request is the checkpoint_add of q with the proof from old.
func (c *Witness) request(q queued, old uint64) (wire.CheckpointAdd, error) {
	req := wire.CheckpointAdd{Key: c.key, Old: old, Proof: []string{}, Note: q.note}
	if old == 0 || c.tree == nil {
		return req, nil
	}
	proof, err := c.tree.ConsistencyProof(old, q.size)
	for _, h := range proof {
		req.Proof = append(req.Proof, base64.StdEncoding.EncodeToString(h[:]))
	}
	return req, err
}

func (c *Witness) unreachable(err error) {
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
func (c *Witness) answered(res wire.Message) {
	c.mu.Lock()
	back := c.down
	c.down = false
	c.mu.Unlock()
	switch r := res.(type) {
	case wire.CheckpointCosigned:
		c.mu.Lock()
		c.held = r.Size
		c.mu.Unlock()
		if back {
			c.log.Printf("the audit witness is back and holds size %d", r.Size)
		}
	case wire.CheckpointRefused:
		c.log.Printf("the audit witness REFUSED a checkpoint (it holds seq %d): %q", r.Held, r.Reason)
	default:
		c.log.Printf("the audit witness answered %s", wire.KindOf(res))
	}
}

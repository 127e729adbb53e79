package witnessd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// postedName is the file in witness/ that holds the seq of the last
// checkpoint handed to gatewayd, so that a restart neither posts it again
// nor skips the hour it was in.
const postedName = "posted"

// poster hands the last checkpoint of each hour to gatewayd, which posts it
// to the owner's DM: a copy off the host that nobody on it can take back.
// An hour's last checkpoint is the newest taken when the next hour's first
// comes, or when the hour ends with none after it. A checkpoint that was
// due when witnessd stopped is lost unless it is still the newest; the
// next hour's is posted as usual.
type poster struct {
	dir    string
	socket string
	log    *log.Logger
	clock  func() time.Time
	mu     sync.Mutex
	cur    *audit.Checkpoint // the newest taken
	due    *audit.Checkpoint // the last of an ended hour, not posted yet
	posted uint64            // the seq of the last posted
}

func newPoster(opts Options) (*poster, error) {
	p := &poster{dir: opts.Dir, socket: opts.Gateway, log: opts.Log, clock: opts.Clock}
	data, err := os.ReadFile(filepath.Join(opts.Dir, postedName))
	if err == nil {
		p.posted, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("witnessd: %s: %w", postedName, err)
	}
	v, err := audit.WitnessKeys(opts.Dir)
	if err != nil || v == nil {
		return p, err
	}
	if p.cur, err = audit.NewestCheckpoint(opts.Dir, v); err != nil {
		return nil, fmt.Errorf("witnessd: %w", err)
	}
	return p, nil
}

func hourOf(ts wire.Timestamp) time.Time { return ts.Time().UTC().Truncate(time.Hour) }

// took notes a checkpoint just taken; the one before it was the last of
// its hour when this one is of a later hour.
func (p *poster) took(cp audit.Checkpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && cp.Seq < p.cur.Seq {
		// The store took a lower seq: the owner reset the witness for a
		// new chain (audit rebase); its hours start afresh.
		p.cur, p.due, p.posted = nil, nil, 0
	}
	if p.cur != nil && hourOf(cp.Time).After(hourOf(p.cur.Time)) {
		p.due = p.cur
	}
	p.cur = &cp
}

// run posts what is due every few seconds until ctx ends; a post that
// fails is tried again at the next look.
func (p *poster) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(cmp.Or(every, time.Minute))
	defer t.Stop()
	for {
		p.postDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// postDue posts the last checkpoint of an ended hour, if one waits.
func (p *poster) postDue(ctx context.Context) {
	p.mu.Lock()
	if p.cur != nil && hourOf(p.cur.Time).Before(p.clock().UTC().Truncate(time.Hour)) {
		p.due = p.cur
	}
	due, posted := p.due, p.posted
	p.mu.Unlock()
	if due == nil || due.Seq <= posted {
		return
	}
	post, err := p.post(ctx, *due)
	if err != nil {
		p.log.Printf("posting the checkpoint of seq %d to the owner: %v; trying again later", due.Seq, err)
		return
	}
	if err := atomicfile.Write(filepath.Join(p.dir, postedName), []byte(strconv.FormatUint(due.Seq, 10)+"\n"), 0o640); err != nil {
		p.log.Printf("posted the checkpoint of seq %d (post %s) but cannot note it: %v", due.Seq, post, err)
	}
	p.log.Printf("posted the checkpoint of seq %d, the last of %s, to the owner (post %q)", due.Seq, hourOf(due.Time).Format("2006-01-02 15:00 UTC"), post)
	p.mu.Lock()
	p.posted = due.Seq
	if p.due == due {
		p.due = nil
	}
	p.mu.Unlock()
}

func (p *poster) post(ctx context.Context, cp audit.Checkpoint) (string, error) {
	c, err := sock.Dial(p.socket)
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, wire.CheckpointPost{Seq: cp.Seq, Hash: cp.ID(), Time: cp.Time, Note: cp.Note()}, nil)
	if err != nil {
		return "", err
	}
	posted, ok := res.(wire.CheckpointPosted)
	if !ok {
		return "", fmt.Errorf("gatewayd answered %s", wire.KindOf(res))
	}
	return posted.Post, nil
}

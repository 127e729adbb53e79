package audit

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/tlog"
)

// await queues req and returns once req is on disk (nil, or req's own error
// if it could not be sealed) or will never be written (the Writer's error).
//
// Group commit: each append encodes its record before it queues (seal.go).
// The first waiting goroutine that finds no batch in progress becomes the
// leader, gathers the appends about to queue, takes everything queued as one
// batch, seals each record and writes the batch with one write and one fsync
// per day file; appends that arrive meanwhile queue up for the next leader.
//
// WARNING: a request is marked done only by lead, after commit has returned
// without error for its whole batch, which is after the fsync; so no caller
// returns before its record is durable, and after a failure no caller in that
// batch or queued behind it is ever told its record was written.
// TestFailedSyncIsNeverAcknowledged, TestFailedSyncFailsTheWholeQueue,
// TestConcurrentAppendsShareFsync and TestKillDuringAppends prove it.
func (w *Writer) await(req *request) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.queue = append(w.queue, req)
	for !req.done {
		switch {
		case w.err != nil:
			return w.err // an earlier batch failed or Close came: req was never written
		case w.leading:
			w.wake.Wait()
		default:
			w.lead()
		}
	}
	return req.err
}

// lead writes the queue as one batch. It is called with mu held and holds it
// again on return, but releases it while writing, so that more appends can
// queue meanwhile; leading marks the chain's tail and files as taken.
func (w *Writer) lead() {
	w.leading = true
	w.gather()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	err := w.commit(batch)
	w.mu.Lock()
	w.leading = false
	switch {
	case errors.Is(err, ErrReplaced):
		w.err = err // its own words say what happened and what to do
	case err != nil:
		w.err = fmt.Errorf("%w: %w", ErrFailed, err)
	default:
		w.durable, w.durableEnd = Head{Seq: w.head.seq, Hash: w.head.hash}, w.end
		w.checkpointDue()
	}
	for _, r := range batch {
		if err != nil {
			r.err = w.err // even a record whose own fsync succeeded: the batch is one unit
		}
		r.done = true
	}
	w.wake.Broadcast()
}

// gather lets the appends that are about to queue join the leader's batch
// before it is taken, with mu held on entry and return. The appends that
// one batch acknowledges all append again at once, but each must first be
// scheduled and encode its record; without this the first of them to queue
// would lead a batch of one or two and the rest would wait a whole fsync
// for the next. So the leader yields the processor, with mu released, for
// as long as each yield brings more requests, at most maxGatherYields
// times. A lone writer yields once and finds nothing new. Only when the
// batch is taken does it change; what is acknowledged, and when, does not.
func (w *Writer) gather() {
	for range maxGatherYields {
		n := len(w.queue)
		w.mu.Unlock()
		runtime.Gosched()
		w.mu.Lock()
		if len(w.queue) == n {
			return
		}
	}
}

// maxGatherYields bounds the wait of gather when appends keep coming.
const maxGatherYields = 64

// commit seals each request in order, writes the lines to the file of their
// date and fsyncs it. Any error here is fatal to the Writer; a request that
// cannot be sealed only fails itself.
func (w *Writer) commit(batch []*request) error {
	if err := w.checkFiles(); err != nil {
		return err
	}
	w.buf, w.leaves = w.buf[:0], w.leaves[:0]
	for _, r := range batch {
		line, day, err := w.seal(r)
		if err != nil {
			r.err = err
			continue
		}
		if w.cur == nil || day != w.day {
			if err := w.flush(); err != nil {
				return err
			}
			if err := w.startDay(day); err != nil {
				return err
			}
		}
		w.leaves = append(w.leaves, [2]int{len(w.buf), len(w.buf) + len(line)})
		w.buf = append(append(w.buf, line...), '\n')
		w.end.Line++
	}
	return w.flush()
}

// seal gives r the next seq, its time and prev, puts them in front of its
// body and returns the line, valid until the next seal, and its day. The
// chain's tail moves on only for a good line, so a record that cannot be
// stored takes no seq.
func (w *Writer) seal(r *request) (line []byte, day int64, err error) {
	now, err := wire.TimestampOf(w.clock())
	if err != nil {
		return nil, 0, fmt.Errorf("audit: clock: %w", err)
	}
	ts := max(now, w.floor, w.head.time)
	w.noteClock(now, ts)
	seq, prev := w.head.seq+1, w.head.hash
	if line, err = appendChain(w.line[:0], chainFields{Seq: seq, Time: ts, Prev: prev}, &w.timeText); err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	line = append(line, r.body...)
	w.line = line
	if len(line) > MaxLine {
		return nil, 0, fmt.Errorf("audit: record is %d bytes, over the %d a line may hold", len(line), MaxLine)
	}
	w.head = chainHead{seq: seq, hash: sha256.Sum256(line), time: ts}
	r.rec.Seq, r.rec.Time, r.rec.Prev = seq, ts, prev
	return line, dayOf(ts), nil
}

// flush writes the buffered lines to the current day file and fsyncs it. A
// short write is a failure like any other: what reached the file is then
// unknown until the log is reopened and verified.
func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.cur.Write(w.buf)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", dayName(w.day), err)
	}
	// The tree takes the batch's lines while the fsync waits on the disk,
	// on another core: its hashing stays off the batch's critical path.
	tree := make(chan error, 1)
	go func() { tree <- w.addLeaves() }()
	err = w.cur.Sync()
	if terr := <-tree; err == nil && terr != nil {
		return terr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dayName(w.day), err)
	}
	w.end.Offset += int64(len(w.buf))
	if cap(w.buf) > 4<<20 {
		w.buf = nil // let one huge batch's buffer go
	}
	if cap(w.line) > 64<<10 {
		w.line = nil // and one huge line's
	}
	w.buf = w.buf[:0]
	return nil
}

// addLeaves makes the lines sealed into the buffer since the last flush
// the tree's next leaves, in order.
func (w *Writer) addLeaves() error {
	leaves := w.leaves
	w.leaves = w.leaves[:0]
	if w.tree == nil || len(leaves) == 0 {
		return nil
	}
	w.tree.mu.Lock()
	defer w.tree.mu.Unlock()
	for _, l := range leaves {
		if err := w.tree.addHash(tlog.RecordHash(w.buf[l[0]:l[1]])); err != nil {
			return err
		}
	}
	return nil
}

// startDay moves to the file for day, creating it.
//
// WARNING: the directory is fsynced before any record in the new file can be
// acknowledged. Without it a power cut may lose the file's name, and with it
// every record inside, each of which was fsynced. TestNewDayFileSyncsDirectory
// proves the order.
func (w *Writer) startDay(day int64) error {
	if w.cur != nil {
		if err := w.cur.Close(); err != nil {
			return fmt.Errorf("close %s: %w", dayName(w.day), err)
		}
		w.cur = nil
	}
	name := dayName(day)
	f, err := w.fs.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, dayFileMode)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	w.cur, w.day, w.end = f, day, Position{File: name}
	if err := w.dirf.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", w.dir, err)
	}
	return nil
}

// noteClock logs, once per episode, that the wall clock (now) is behind the
// time the chain keeps (ts): records never go back in time, so they carry ts
// until the clock catches up, which ends the episode.
func (w *Writer) noteClock(now, ts wire.Timestamp) {
	switch {
	case now >= ts:
		w.behind = false
	case !w.behind:
		w.behind = true
		if w.logf != nil {
			nt, _ := now.MarshalText()
			tt, _ := ts.MarshalText()
			w.logf("audit: the wall clock (%s) is behind the last record's time (%s), %s: it was stepped back; records keep %s until the clock catches up",
				nt, tt, time.Duration(ts-now)*time.Millisecond, tt)
		}
	}
}

package audit

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"boxmaker/wire"
)

// await queues req and returns once req is on disk (nil, or req's own error
// if it could not be encoded) or will never be written (the Writer's error).
//
// Group commit: the first waiting goroutine that finds no batch in progress
// becomes the leader, takes everything queued so far as one batch and writes
// it with one write and one fsync per day file; appends that arrive meanwhile
// queue up for the next leader.
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
	batch := w.queue
	w.queue = nil
	w.leading = true
	w.mu.Unlock()
	err := w.commit(batch)
	w.mu.Lock()
	w.leading = false
	if err != nil {
		w.err = fmt.Errorf("%w: %w", ErrFailed, err)
	} else {
		w.durable = Head{Seq: w.head.seq, Hash: w.head.hash}
	}
	for _, r := range batch {
		if err != nil {
			r.err = w.err // even a record whose own fsync succeeded: the batch is one unit
		}
		r.done = true
	}
	w.wake.Broadcast()
}

// commit seals each request in order, writes the lines to the file of their
// date and fsyncs it. Any error here is fatal to the Writer; a request that
// cannot be sealed only fails itself.
func (w *Writer) commit(batch []*request) error {
	w.buf = w.buf[:0]
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
		w.buf = append(append(w.buf, line...), '\n')
	}
	return w.flush()
}

// seal gives r the next seq, its time and prev, encodes it and returns the
// line and its day. The chain's tail moves on only for a good line, so a
// record that cannot be stored takes no seq.
func (w *Writer) seal(r *request) (line []byte, day int64, err error) {
	now, err := wire.TimestampOf(w.clock())
	if err != nil {
		return nil, 0, fmt.Errorf("audit: clock: %w", err)
	}
	ts := max(now, w.floor, w.head.time)
	seq, prev := w.head.seq+1, w.head.hash
	var e wire.AuditEntry
	if r.recovery != nil {
		e = wire.RecoveryRecord{Seq: seq, Time: ts, Prev: prev, Recovery: *r.recovery}
	} else {
		r.rec.Seq, r.rec.Time, r.rec.Prev = seq, ts, prev
		e = r.rec
	}
	if line, err = wire.EncodeAuditEntry(e); err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	if len(line) > MaxLine {
		return nil, 0, fmt.Errorf("audit: record is %d bytes, over the %d a line may hold", len(line), MaxLine)
	}
	w.head = chainHead{seq: seq, hash: sha256.Sum256(line), time: ts}
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
	if err := w.cur.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dayName(w.day), err)
	}
	if cap(w.buf) > 4<<20 {
		w.buf = nil // let one huge batch's buffer go
	}
	w.buf = w.buf[:0]
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
	w.cur, w.day = f, day
	if err := w.dirf.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", w.dir, err)
	}
	return nil
}

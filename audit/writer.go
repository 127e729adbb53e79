package audit

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"boxmaker/wire"
)

// Writer appends decisions to the audit log in one directory. It is safe for
// concurrent use, and it is the only code that writes the log: one Writer per
// directory, held by an flock on the directory's .lock file.
type Writer struct {
	dir   string
	clock func() time.Time
	fs    fileSystem
	lock  *os.File

	mu         sync.Mutex
	wake       sync.Cond // broadcast when a batch ends or the writer closes
	queue      []*request
	leading    bool  // a goroutine is gathering or writing a batch, without mu held
	err        error // sticky: set once, the answer to every later append
	closed     bool
	durable    Head          // the newest record known to be on disk
	durableEnd Position      // where durable ends
	cp         *checkpointer // nil without WithCheckpoints
	tree       *treeFile     // the Merkle tree's stored hashes (tree.go)
	noTree     bool          // keep no tree: only the benchmark of the tree's cost

	// The tail of the chain and the open files belong to whichever goroutine
	// is leading (or to Open, before the Writer is shared); see lead.
	head     chainHead
	floor    wire.Timestamp // no record's time goes before this
	dirf     file
	cur      file     // the day file being appended to; nil before the first
	day      int64    // cur's day
	end      Position // where the last line sealed ends (once flushed)
	buf      []byte   // the batch's lines
	leaves   [][2]int // where in buf each line sealed since the last flush lies, for the tree
	line     []byte   // the line being sealed
	timeText cachedTime
	logf     func(format string, args ...any) // nil: nothing is logged
	behind   bool                             // the clock is behind the chain's time: an episode is logged
}

// request is one entry waiting for a batch: a record, or at Open the
// recovery record for a torn tail, already encoded but for its chain fields
// (see seal.go).
type request struct {
	rec  wire.AuditRecord // its seq, time and prev are set once it is sealed
	body []byte
	done bool
	err  error
}

// Option changes how Open sets up a Writer.
type Option func(*Writer)

// WithClock makes the Writer take each record's time from now instead of
// time.Now. Times are kept from ever going backwards, whatever now says, so
// that the day files stay in chain order.
func WithClock(now func() time.Time) Option {
	return func(w *Writer) { w.clock = now }
}

// WithLog makes the Writer say through logf what it does not refuse but the
// owner should know: a wall clock behind the last record's time (stepped
// back), once per episode, while records keep the last time.
func WithLog(logf func(format string, args ...any)) Option {
	return func(w *Writer) { w.logf = logf }
}

// withFileSystem replaces the files the Writer writes through, for tests
// that make writes and fsyncs fail.
func withFileSystem(fs fileSystem) Option {
	return func(w *Writer) { w.fs = fs }
}

// Open takes the writer lock on dir, an existing directory, and makes the log
// there ready for appending: it verifies the whole chain, refusing a log that
// does not verify, and recovers a torn last write (see recover.go). A second
// Open of the same directory fails with ErrLocked while the first is open.
func Open(dir string, opts ...Option) (*Writer, error) {
	w := &Writer{dir: dir, clock: time.Now, fs: osFS{}}
	for _, o := range opts {
		o(w)
	}
	w.wake.L = &w.mu
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	w.lock = lock
	var last *Checkpoint
	if w.cp != nil {
		if last, err = w.cp.lastCheckpoint(dir); err != nil {
			return nil, w.failOpen(fmt.Errorf("%w\n%s", err, recoverHint))
		}
	}
	if err := w.resume(last); err != nil {
		return nil, w.failOpen(err)
	}
	if w.cp != nil {
		if err := w.startCheckpoints(last); err != nil {
			return nil, w.failOpen(err)
		}
	}
	return w, nil
}

// failOpen closes what a failed Open opened. Its own error comes first:
// brokerd's supervisor shows a death's last line, which must stay the
// reason Open failed (a full disk fails the close's tree flush too).
func (w *Writer) failOpen(err error) error {
	return errors.Join(w.closeFiles(), err)
}

// Append stores one decision and returns it as stored, with the seq, time and
// prev the Writer gave it (rec's own must be zero). It returns only once the
// record is on disk: the decision may take effect then, and not before. An
// error means the record must be treated as not written.
func (w *Writer) Append(rec wire.AuditRecord) (wire.AuditRecord, error) {
	if rec.Seq != 0 || rec.Time != 0 || rec.Prev != (wire.Hash32{}) {
		return wire.AuditRecord{}, errors.New("audit: Append gives seq, time and prev; pass them as zero")
	}
	body, err := encodeBody(rec)
	if err != nil {
		return wire.AuditRecord{}, err
	}
	req := &request{rec: rec, body: body}
	if err := w.await(req); err != nil {
		return wire.AuditRecord{}, err
	}
	return req.rec, nil
}

// Head returns the seq and hash of the newest record on disk.
func (w *Writer) Head() Head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.durable
}

// Close waits for the batch being written, then closes the files and
// releases the lock. Appends queued behind that batch, and any later ones,
// fail with ErrClosed (or with ErrFailed, if the Writer had failed).
func (w *Writer) Close() error {
	w.mu.Lock()
	for w.leading {
		w.wake.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	if w.err == nil {
		w.err = ErrClosed
	}
	w.wake.Broadcast()
	w.mu.Unlock()
	return errors.Join(w.stopCheckpoints(), w.closeFiles())
}

func (w *Writer) closeFiles() error {
	var errs []error
	for _, f := range []file{w.cur, w.dirf} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	if w.cp != nil && w.cp.f != nil {
		errs = append(errs, w.cp.f.Close())
	}
	if w.tree != nil {
		errs = append(errs, w.tree.close())
	}
	if w.lock != nil {
		errs = append(errs, w.lock.Close()) // releases the flock
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit: close: %w", err)
	}
	return nil
}

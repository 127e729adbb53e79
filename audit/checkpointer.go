package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// CheckpointConfig makes a Writer sign checkpoints of its Merkle tree (the
// tree of the records up to the head, checkpoint.go).
type CheckpointConfig struct {
	Signer note.Signer
	// Verifier checks what the signer signed, and the Legacy checkpoints
	// of an older key, when there are any.
	Verifier note.Verifiers
	Origin   string        // the first line of every checkpoint
	Records  uint64        // a checkpoint after this many new records
	Interval time.Duration // or after this long with new records
	// Mirror is a file outside the log's directory that keeps the newest
	// checkpoint, so that deleting the whole directory (checkpoints.jsonl
	// with it) while the writer is stopped is noticed at the next Open.
	Mirror string
	// Signed, when set, is given each checkpoint and its signed note once
	// both are durable, from the goroutine that signs (or Open and Close).
	// It must not block: brokerd queues the note for the witness.
	Signed func(cp Checkpoint, note string)
}

// WithCheckpoints makes Open check the chain from the newest checkpoint
// instead of from the first record, refusing a log shorter than it or
// different from it, and makes the Writer sign a checkpoint after every
// Records records or Interval with new records, at Open when the head is past
// the newest checkpoint or the newest is a Legacy one (a log older than the
// key, or than the tree, is thus verified once in full, its tree built, and
// then checkpointed), and at Close.
func WithCheckpoints(c CheckpointConfig) Option {
	return func(w *Writer) { w.cp = &checkpointer{cfg: c} }
}

// checkpointer signs and appends checkpoints beside the writer's appends, in
// its own goroutine, so that signing and its fsync never hold up a batch.
type checkpointer struct {
	cfg  CheckpointConfig
	f    *os.File   // checkpoints.jsonl, appending
	last Checkpoint // the newest checkpoint written; guarded by Writer.mu
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// broken: signing or writing a checkpoint failed, and the Writer with it
	broken bool
}

// lastCheckpoint reads the newest checkpoint in the log's directory, or in
// the mirror when that is newer (or the directory's file is gone). nil means
// none has ever been signed.
func (c *checkpointer) lastCheckpoint(dir string) (*Checkpoint, error) {
	cps, err := ReadCheckpoints(dir, c.cfg.Verifier)
	if err != nil {
		return nil, err
	}
	var last *Checkpoint
	if len(cps) > 0 {
		last = &cps[len(cps)-1]
	}
	mirrored, err := c.readMirror()
	switch {
	case err != nil:
		return nil, err
	case mirrored == nil:
		return last, nil
	case last == nil:
		return nil, fmt.Errorf("audit: %s holds no checkpoint, but %s holds seq %d: the log's checkpoints were deleted", CheckpointsName, c.cfg.Mirror, mirrored.Seq)
	case last.Seq < mirrored.Seq:
		return nil, fmt.Errorf("audit: the newest checkpoint in %s is seq %d, but %s holds seq %d: checkpoints were cut off", CheckpointsName, last.Seq, c.cfg.Mirror, mirrored.Seq)
	case extends(*mirrored, *last) != nil:
		return nil, fmt.Errorf("audit: %s and %s disagree: %w", CheckpointsName, c.cfg.Mirror, extends(*mirrored, *last))
	}
	return last, nil
}

func (c *checkpointer) readMirror() (*Checkpoint, error) {
	if c.cfg.Mirror == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.cfg.Mirror)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	cps, err := parseCheckpoints(data, c.cfg.Verifier)
	if err != nil || len(cps) == 0 {
		return nil, fmt.Errorf("audit: %s: %v (want one signed checkpoint)", c.cfg.Mirror, err)
	}
	return &cps[len(cps)-1], nil
}

// start opens checkpoints.jsonl for appending, checkpoints the head if it is
// past the last checkpoint, and starts the goroutine that signs the rest.
func (w *Writer) startCheckpoints(last *Checkpoint) error {
	c := w.cp
	if last != nil {
		c.last = *last
	}
	path := filepath.Join(w.dir, CheckpointsName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, dayFileMode)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	c.f = f
	if err := endTornLine(f); err != nil {
		return fmt.Errorf("audit: %s: %w", CheckpointsName, err)
	}
	if err := w.dirf.Sync(); err != nil { // the file's name, if it was just made
		return fmt.Errorf("audit: fsync directory %s: %w", w.dir, err)
	}
	if err := w.checkpoint(); err != nil {
		return err
	}
	c.kick, c.stop, c.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go w.checkpointLoop()
	return nil
}

// endTornLine writes a newline after a last line cut short, so that the next
// checkpoint starts a line of its own.
func endTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil && err != io.EOF {
		return err
	}
	if b[0] == '\n' {
		return nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return err
	}
	return f.Sync()
}

// checkpointLoop signs a checkpoint when a batch reaches Records new records
// or Interval passes with new records, until stopCheckpoints.
func (w *Writer) checkpointLoop() {
	c := w.cp
	defer close(c.done)
	tick := time.NewTicker(max(c.cfg.Interval, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		case <-tick.C:
		}
		if err := w.checkpoint(); err != nil {
			c.broken = true // read by stopCheckpoints after done is closed
			w.fail(err)
			return
		}
	}
}

// due reports, with mu held, whether enough records followed the last
// checkpoint for the next; lead calls it after each batch.
func (w *Writer) checkpointDue() {
	if c := w.cp; c != nil && c.kick != nil && w.durable.Seq-c.last.Seq >= max(c.cfg.Records, 1) {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// checkpoint signs the durable head, if it is past the last checkpoint (or
// the last is a Legacy one: the first checkpoint of the tree's form), and
// appends it to checkpoints.jsonl and the mirror, each fsynced, after the
// tree's hashes up to it. Only the checkpoint goroutine, or Open and Close
// when it is not running, call it.
func (w *Writer) checkpoint() error {
	w.mu.Lock()
	head, end, last := w.durable, w.durableEnd, w.cp.last
	w.mu.Unlock()
	if head.Seq == 0 || head.Seq < last.Seq || head.Seq == last.Seq && !last.Legacy {
		return nil
	}
	ts, err := wire.TimestampOf(w.clock())
	if err != nil {
		return fmt.Errorf("audit: clock: %w", err)
	}
	root, err := w.tree.sync(int64(head.Seq))
	if err != nil {
		return err
	}
	cp := Checkpoint{Origin: w.cp.cfg.Origin, Seq: head.Seq, Root: wire.Hash32(root), Hash: head.Hash, Time: ts, End: end}
	msg, line, err := SignCheckpoint(cp, w.cp.cfg.Signer)
	if err != nil {
		return err
	}
	if _, err := w.cp.f.Write(line); err != nil {
		return fmt.Errorf("audit: write %s: %w", CheckpointsName, err)
	}
	if err := w.cp.f.Sync(); err != nil {
		return fmt.Errorf("audit: fsync %s: %w", CheckpointsName, err)
	}
	if err := writeMirror(w.cp.cfg.Mirror, line); err != nil {
		return err
	}
	cp.note = string(msg)
	w.mu.Lock()
	w.cp.last = cp
	w.mu.Unlock()
	if w.cp.cfg.Signed != nil {
		w.cp.cfg.Signed(cp, string(msg))
	}
	return nil
}

// writeMirror replaces the mirror file with line, atomically and durably.
func writeMirror(path string, line []byte) error {
	if path == "" {
		return nil
	}
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	_, err = f.Write(line)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("audit: checkpoint mirror %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// stopCheckpoints stops the goroutine and signs the durable head as it is at
// the stop; closeFiles closes the file. It signs even after the Writer
// failed, since every record up to the durable head was written: after the
// log was deleted under the Writer, that checkpoint (in the mirror, at
// least) is what makes the next Open refuse the empty log.
func (w *Writer) stopCheckpoints() error {
	c := w.cp
	if c == nil || c.f == nil {
		return nil
	}
	if c.stop == nil {
		return nil
	}
	close(c.stop)
	<-c.done
	if c.broken {
		return nil
	}
	return w.checkpoint()
}

package audit

import (
	"fmt"
	"os"
	"path/filepath"

	"boxmaker/wire"
)

// resume reads the log the Writer has just locked, checks the whole chain and
// repairs a torn tail, so that appending can continue from the last record.
func (w *Writer) resume(last *Checkpoint) error {
	s, err := w.scanForResume(last)
	if err != nil {
		return fmt.Errorf("audit: refusing to append to the log in %s, which does not verify: %w", w.dir, err)
	}
	w.head = s.head
	w.durable = Head{Seq: s.head.seq, Hash: s.head.hash}
	if w.dirf, err = w.fs.OpenFile(w.dir, os.O_RDONLY, 0); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if s.lastFile != nil {
		// Records never go into a file older than the newest one, even an
		// empty one, so that file order stays chain order.
		w.floor = max(s.head.time, wire.Timestamp(s.lastFile.day*msPerDay))
		name := filepath.Join(w.dir, s.lastFile.name)
		if w.cur, err = w.fs.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		w.day = s.lastFile.day
		st, err := os.Stat(name)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		w.end = Position{File: s.lastFile.name, Offset: st.Size(), Line: s.endLine}
	}
	if err := w.repair(s); err != nil {
		return fmt.Errorf("audit: recovering the torn end of the log in %s: %w", w.dir, err)
	}
	w.durable, w.durableEnd = Head{Seq: w.head.seq, Hash: w.head.hash}, w.end
	return nil
}

// repair ends a torn tail. The torn bytes stay where they are: the last line
// gets its newline, and when that line (with any lines after the last record)
// does not parse, a recovery record follows naming its length and SHA-256 and
// chaining from the last complete record. A last line that parses and chains
// and lacks only its newline was written whole, so it just gets the newline.
//
// WARNING: the newline is written and fsynced before the recovery record, so
// a crash at any point leaves a log that the next Open repairs: after
// "torn\n" the run is that line; after "torn\n" and part of the recovery
// record, the run is both lines, and the next recovery record describes them
// together. TestRecoveryAfterCrashDuringRecovery proves it.
func (w *Writer) repair(s *chainScan) error {
	if s.noNewline {
		w.buf = append(w.buf[:0], '\n')
		if err := w.flush(); err != nil {
			return err
		}
	}
	if !s.run.open {
		return nil
	}
	body, err := encodeBody(wire.RecoveryRecord{Recovery: wire.Recovery{TornBytes: s.run.n, TornSHA256: s.runSum()}})
	if err != nil {
		return err
	}
	req := &request{body: body}
	if err := w.commit([]*request{req}); err != nil {
		return err
	}
	if req.err != nil {
		return req.err
	}
	w.durable = Head{Seq: w.head.seq, Hash: w.head.hash}
	return nil
}

package witnessd

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"boxmaker/audit"
	"boxmaker/roles/internal/atomicfile"

	"golang.org/x/mod/sumdb/note"
)

// store is witness/: the key it trusts and the checkpoints it took, in
// audit's checkpoints.jsonl form so that `boxmaker audit verify` reads it
// with the audit package. It keeps no state in memory: each submit reads
// the key and the newest checkpoint from disk, so that an owner who resets
// the witness (moves witness/'s files aside) is heard at the next submit.
type store struct {
	dir    string
	origin string // the first line every checkpoint must have
	log    *log.Logger
	mu     sync.Mutex
}

// refusal is why a checkpoint was not taken; held is the seq of the
// newest checkpoint the witness holds.
type refusal struct {
	held   uint64
	reason string
}

func (r *refusal) Error() string { return r.reason }

func refuse(held uint64, format string, args ...any) *refusal {
	return &refusal{held: held, reason: fmt.Sprintf(format, args...)}
}

// submit checks msg, signed by key, and keeps it when it extends the
// newest checkpoint held. It returns the newest checkpoint held afterwards
// and whether it was taken now (false: it was held already). Its error is a
// *refusal when the checkpoint is refused, anything else when the witness
// could not read or write its directory.
func (s *store) submit(key, msg string) (audit.Checkpoint, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, other, err := s.trusted(key)
	if err != nil {
		return audit.Checkpoint{}, false, err
	}
	newest, err := audit.NewestCheckpoint(s.dir, v)
	if err != nil {
		return audit.Checkpoint{}, false, fmt.Errorf("witness: %w", err)
	}
	var held audit.Checkpoint
	if newest != nil {
		held = *newest
	}
	if other != "" {
		return held, false, refuse(held.Seq, "%s", other)
	}
	line, err := audit.CheckpointLine(msg) // the size bound, before anything reads msg
	if err != nil {
		return held, false, refuse(held.Seq, "refused unread: %v", err)
	}
	cp, err := audit.OpenCheckpoint([]byte(msg), v)
	switch {
	case err != nil:
		return held, false, refuse(held.Seq, "not a checkpoint correctly signed by the key the witness trusts: %v", err)
	case cp.Origin != s.origin:
		return held, false, refuse(held.Seq, "the checkpoint is of %q, not of this witness's log %q", cp.Origin, s.origin)
	case cp.Seq == 0:
		return held, false, refuse(held.Seq, "a checkpoint of seq 0 signs no record")
	case cp.Seq < held.Seq:
		return held, false, refuse(held.Seq, "rollback: seq %d (%s) is below seq %d (%s), which the witness holds", cp.Seq, cp.Hash, held.Seq, held.Hash)
	case cp.Seq == held.Seq && cp.Hash != held.Hash:
		return held, false, refuse(held.Seq, "rollback: seq %d with hash %s, but the witness holds seq %d with hash %s", cp.Seq, cp.Hash, held.Seq, held.Hash)
	case cp.Seq == held.Seq:
		return held, false, nil
	}
	if err := s.append(line); err != nil {
		return held, false, err
	}
	return cp, true, nil
}

// check reads the newest checkpoint held, as each submit does, for the
// start: a witness/ whose end the witness cannot read (a line over the
// bound, one not correctly signed) is an error, never an older checkpoint
// or none taken for the newest.
func (s *store) check() error {
	v, err := audit.ReadVerifierKey(filepath.Join(s.dir, audit.WitnessKeyName))
	if err != nil || v == nil {
		return err
	}
	_, err = audit.NewestCheckpoint(s.dir, v)
	return err
}

// trusted returns the verifier of the key the witness trusts, trusting
// key first when the witness trusts none yet. other says why key is not
// that key, when it is not.
func (s *store) trusted(key string) (v note.Verifier, other string, err error) {
	path := filepath.Join(s.dir, audit.WitnessKeyName)
	data, err := os.ReadFile(path)
	var held note.Verifier
	heldKey := strings.TrimSpace(string(data))
	switch {
	case err == nil:
		if held, err = note.NewVerifier(heldKey); err != nil {
			return nil, "", fmt.Errorf("witness: %s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, "", fmt.Errorf("witness: %w", err)
	}
	offered, err := note.NewVerifier(key)
	switch {
	case held == nil && err != nil:
		return nil, "", refuse(0, "%q is not a verifier key: %v", key, err)
	case held == nil:
		if err := atomicfile.Write(path, []byte(key+"\n"), 0o644); err != nil {
			return nil, "", fmt.Errorf("witness: trust key: %w", err)
		}
		s.log.Printf("trusting brokerd's checkpoint key %s on first use (kept in %s)", key, path)
		return offered, "", nil
	case err != nil:
		return held, fmt.Sprintf("%q is not a verifier key: %v", key, err), nil
	case heldKey != key:
		return held, fmt.Sprintf("signed by key %s+%08x, but the witness trusts %s only; if the owner replaced brokerd's key, "+
			"the owner resets the witness (see docs/deploy.md)", offered.Name(), offered.KeyHash(), heldKey), nil
	}
	return held, "", nil
}

// append adds line (audit.CheckpointLine's) to checkpoints.jsonl and
// fsyncs it before the witness answers: a checkpoint the witness said it
// holds survives a crash. A last line cut short by a crash is ended first,
// so that line is one of its own (audit.ReadCheckpoints skips the cut one).
func (s *store) append(line []byte) error {
	path := filepath.Join(s.dir, audit.CheckpointsName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err == nil && size > 0 {
		last := make([]byte, 1)
		if _, err = f.ReadAt(last, size-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if err == nil {
		_, err = f.Write(line)
	}
	if err = errors.Join(err, f.Sync(), f.Close()); err == nil && size == 0 {
		err = atomicfile.SyncDir(s.dir) // the file's name, if it was just made
	}
	if err != nil {
		return fmt.Errorf("witness: keep checkpoint: %w", err)
	}
	return nil
}

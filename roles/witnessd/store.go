package witnessd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// store is witness/: the key it trusts, its own cosignature key and the
// checkpoints it took, cosigned, in audit's checkpoints.jsonl form so that
// `boxmaker audit verify` reads it with the audit package. It keeps no
// checkpoint or key in memory: each add reads the keys and the newest
// checkpoint from disk, so that an owner who resets the witness (moves witness/'s
// files aside) is heard at the next add.
type store struct {
	dir    string
	origin string // the first line every checkpoint must have
	log    *log.Logger
	clock  func() time.Time // the cosignatures' time
	mu     sync.Mutex
}

// maxProof is C2SP tlog-witness's bound on a consistency proof's lines.
const maxProof = 63

// refusal is why a checkpoint was not taken; held is the size of the
// newest checkpoint the witness holds.
type refusal struct {
	held   uint64
	reason string
	// stale: the proof starts at another size than the one held (C2SP's
	// 409). brokerd learns the size from the answer and proves again: after
	// its restart, the first answer is this one. Nothing is wrong.
	stale bool
}

func (r *refusal) Error() string { return r.reason }

func refuse(held uint64, format string, args ...any) *refusal {
	return &refusal{held: held, reason: fmt.Sprintf(format, args...)}
}

// add checks req's checkpoint and keeps it, cosigned, when a valid
// consistency proof shows it extends the newest checkpoint held (C2SP
// tlog-witness, check and persist under one lock). It returns the
// checkpoint held afterwards, its Note cosigned, and whether it was taken
// now (false: it was held already). Its error is a
// *refusal when the checkpoint is refused, anything else when the witness
// could not read or write its directory.
func (s *store) add(req wire.CheckpointAdd) (audit.Checkpoint, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.trusted(req.Key)
	if err != nil {
		return audit.Checkpoint{}, false, err
	}
	held, err := s.newest(v)
	if err != nil {
		return audit.Checkpoint{}, false, err
	}
	if _, err := audit.CheckpointLine(req.Note); err != nil { // the size bound, before anything reads the note
		return held, false, refuse(held.Seq, "refused unread: %v", err)
	}
	cp, err := audit.OpenCheckpoint([]byte(req.Note), v)
	switch {
	case err != nil:
		return held, false, refuse(held.Seq, "not a checkpoint correctly signed by the key the witness trusts: %v", err)
	case cp.Origin != s.origin:
		return held, false, refuse(held.Seq, "the checkpoint is of %q, not of this witness's log %q", cp.Origin, s.origin)
	case cp.Legacy || cp.Seq == 0:
		return held, false, refuse(held.Seq, "not a checkpoint of a tree of records (size 0, or the older form without a root)")
	case req.Old != held.Seq:
		r := refuse(held.Seq, "the proof starts at size %d, but the witness holds size %d", req.Old, held.Seq)
		r.stale = true
		return held, false, r
	case cp.Seq < held.Seq:
		return held, false, refuse(held.Seq, "rollback: size %d is below size %d, which the witness holds", cp.Seq, held.Seq)
	case cp.Seq == held.Seq && !held.Legacy && cp.Root != held.Root:
		return held, false, refuse(held.Seq, "fork: size %d with another root than the one the witness holds", cp.Seq)
	case cp.Seq == held.Seq && !held.Legacy:
		return held, false, nil
	}
	if err := s.consistent(req.Proof, held, cp); err != nil {
		return held, false, err
	}
	cosigner, err := loadCosigner(s.dir, s.origin, s.clock, s.log.Printf)
	if err != nil {
		return held, false, err
	}
	cosigned, err := audit.Cosign([]byte(req.Note), v, cosigner)
	if err != nil {
		return held, false, fmt.Errorf("witness: cosign: %w", err)
	}
	if err := s.append(string(cosigned)); err != nil {
		return held, false, err
	}
	took, err := s.newest(v)
	return took, err == nil, err
}

// consistent checks the proof that cp's tree extends held's.
func (s *store) consistent(proof []string, held, cp audit.Checkpoint) error {
	switch {
	case held.Seq == 0 && len(proof) == 0:
		return nil
	case held.Legacy:
		// A checkpoint of the chain alone has no root to prove from: the
		// first of the tree's form is taken on the key and a size that does
		// not fall, once, and said; audit verify checks both by the log.
		s.log.Printf("migrating from the chain's checkpoints (seq %d) to the tree's (size %d): no consistency proof can start from a checkpoint without a root", held.Seq, cp.Seq)
		return nil
	case len(proof) > maxProof:
		return refuse(held.Seq, "a consistency proof of %d hashes, over the %d allowed", len(proof), maxProof)
	}
	p := make(tlog.TreeProof, len(proof))
	for i, line := range proof {
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(b) != tlog.HashSize {
			return refuse(held.Seq, "consistency proof line %d is not a base64 hash", i+1)
		}
		copy(p[i][:], b)
	}
	if err := tlog.CheckTree(p, int64(cp.Seq), tlog.Hash(cp.Root), int64(held.Seq), tlog.Hash(held.Root)); err != nil {
		return refuse(held.Seq, "no valid consistency proof from size %d to %d (%v): the log was rewritten, forked or cut", held.Seq, cp.Seq, err)
	}
	return nil
}

// check reads the newest checkpoint held, as each add does, for the
// start: a witness/ whose end the witness cannot read (a line over the
// bound, one not correctly signed) is an error, never an older checkpoint
// or none taken for the newest.
func (s *store) check() error {
	v, err := audit.ReadVerifierKey(filepath.Join(s.dir, audit.WitnessKeyName))
	if err != nil || v == nil {
		return err
	}
	_, err = s.newest(v)
	return err
}

// newest is the newest checkpoint held; the zero one when none.
func (s *store) newest(v note.Verifiers) (audit.Checkpoint, error) {
	cosign, err := audit.ReadVerifierKey(filepath.Join(s.dir, audit.WitnessCosignKeyName))
	if err != nil {
		return audit.Checkpoint{}, fmt.Errorf("witness: %w", err)
	}
	newest, err := audit.NewestCheckpoint(s.dir, multi{v, cosign})
	if err != nil || newest == nil {
		return audit.Checkpoint{}, err
	}
	return *newest, nil
}

// multi is two lists of verifiers as one.
type multi [2]note.Verifiers

func (m multi) Verifier(name string, hash uint32) (note.Verifier, error) {
	v, err := m[0].Verifier(name, hash)
	if err != nil && m[1] != nil {
		return m[1].Verifier(name, hash)
	}
	return v, err
}

// trusted returns the verifiers of the keys the witness trusts (key.pub:
// brokerd's key, then its earlier names). With none yet, it trusts key on
// first use, and says so and records when. A key with another name but the
// same public key is brokerd's key renamed (audit.RenameKey, when the log
// took its origin's name): trusted, first in key.pub, and said.
func (s *store) trusted(key string) (note.Verifiers, error) {
	path := filepath.Join(s.dir, audit.WitnessKeyName)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("witness: %w", err)
	}
	lines := strings.Fields(string(data))
	if _, verr := note.NewVerifier(key); verr != nil {
		return nil, refuse(0, "%q is not a verifier key: %v", key, verr)
	}
	switch {
	case len(lines) == 0:
		if err := s.pin(path, []string{key}); err != nil {
			return nil, err
		}
		when := time.Now().UTC().Format(time.RFC3339)
		if err := atomicfile.Write(filepath.Join(s.dir, firstUseName), []byte(when+" "+key+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("witness: %w", err)
		}
		s.log.Printf("TRUSTING brokerd's checkpoint key %s on first use, at %s (kept in %s; boxmaker audit checkpoints shows it)", key, when, path)
		lines = []string{key}
	case lines[0] == key:
	case audit.SameKey(lines[0], key):
		lines = append([]string{key}, lines...)
		if err := s.pin(path, lines); err != nil {
			return nil, err
		}
		s.log.Printf("brokerd's checkpoint key is now named %s: the same key as %s", key, lines[1])
	default:
		v, _ := note.NewVerifier(key)
		held, _ := s.held(lines)
		return nil, refuse(held, "signed by key %s+%08x, but the witness trusts %s only; if the owner replaced brokerd's key, "+
			"the owner resets the witness (see docs/deploy.md)", v.Name(), v.KeyHash(), lines[0])
	}
	v, err := audit.ReadVerifierKeyText(lines)
	if err != nil {
		return nil, fmt.Errorf("witness: %s: %w", path, err)
	}
	return v, nil
}

// held is, for a refusal, the size the witness holds.
func (s *store) held(lines []string) (uint64, error) {
	v, err := audit.ReadVerifierKeyText(lines)
	if err != nil {
		return 0, err
	}
	cp, err := s.newest(v)
	return cp.Seq, err
}

// firstUseName records when, and which key, the witness first trusted.
const firstUseName = "first-use"

func (s *store) pin(path string, keys []string) error {
	if err := atomicfile.Write(path, []byte(strings.Join(keys, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("witness: trust key: %w", err)
	}
	return nil
}

// append adds msg to checkpoints.jsonl and fsyncs it before the witness
// answers: a checkpoint the witness said it holds survives a crash. A last
// line cut short by a crash is ended first, so that msg has a line of its
// own (audit.ReadCheckpoints skips the cut line).
func (s *store) append(msg string) error {
	line, err := audit.CheckpointLine(msg)
	if err != nil {
		return err
	}
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

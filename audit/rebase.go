package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/sys/unix"
)

// RebaseTool is the tool the first record of a rebased chain names. The
// audit record has no kind of its own for a rebase, so, like an owner's
// notes_endorse, it is recorded as the owner's approval of this pseudo-tool
// with no grant; its arguments name the old chain's last checkpoint, the
// reason and where the old log was moved.
const RebaseTool = "audit_rebase"

// RebaseSession is the session the rebase record is filed under.
const RebaseSession = "audit-rebase"

// RebaseArgs are a rebase record's arguments.
type RebaseArgs struct {
	Reason string `json:"reason"`
	Seq    uint64 `json:"checkpoint_seq"`  // the old chain's last checkpoint; 0: none
	Hash   string `json:"checkpoint_hash"` // its root (a Legacy one's chain hash), hex; "" with none
	Time   string `json:"checkpoint_time"`
	// Witnessed says the checkpoint named is the witness's, newer than
	// any of brokerd's that were left.
	Witnessed bool   `json:"checkpoint_witnessed"`
	MovedTo   string `json:"moved_to"` // the old log's directory now
	Approver  string `json:"approver"`
}

// RebaseConfig says what Rebase gives up and why.
type RebaseConfig struct {
	Dir      string         // the audit directory
	Mirror   string         // brokerd's copy of the newest checkpoint (broker/checkpoint.last); may be missing
	Verifier note.Verifiers // checks the checkpoints; nil when none can exist
	// Witnessed is the witness's newest checkpoint, nil when it holds none:
	// the record names it when it is newer than brokerd's (whose
	// checkpoints an intruder with brokerd's uid can cut off).
	Witnessed *Checkpoint
	Reason    string
	Approver  string           // local:<user>
	Now       func() time.Time // time.Now when nil
}

// Rebase gives up the chain in cfg.Dir for a new one, the owner's recovery
// when the writer refuses a log shorter than, or different from, its last
// checkpoint. The writer must be stopped: Rebase takes its lock without
// waiting and fails with ErrLocked while it runs. Nothing is deleted: the old
// directory (day files, checkpoints, key) is moved beside it, to
// <dir>.rebased-<time>, with the mirror inside it as broker-checkpoint.last,
// and a new directory with the same owner and mode takes its place, swapped
// in atomically, holding one record: RebaseTool with RebaseArgs, naming the
// newest checkpoint of the mirror, checkpoints.jsonl and the witness's.
func Rebase(cfg RebaseConfig) (string, wire.AuditRecord, error) {
	var rec wire.AuditRecord
	if cfg.Reason == "" {
		return "", rec, errors.New("audit rebase: a reason is required")
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	dir := filepath.Clean(cfg.Dir)
	st, err := os.Stat(dir)
	if err != nil {
		return "", rec, fmt.Errorf("audit rebase: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return "", rec, fmt.Errorf("%w: brokerd is running; stop it before a rebase", err)
		}
		return "", rec, err
	}
	defer lock.Close()
	last, err := newestCheckpoint(dir, cfg.Mirror, cfg.Verifier)
	if err != nil {
		return "", rec, err
	}
	stamp := now().UTC().Format("20060102T150405.000Z")
	aside := dir + ".rebased-" + stamp
	args := RebaseArgs{Reason: cfg.Reason, MovedTo: aside, Approver: cfg.Approver}
	if w := cfg.Witnessed; w != nil && (last == nil || w.Seq > last.Seq) {
		last, args.Witnessed = w, true
	}
	if last != nil {
		ts, _ := last.Time.MarshalText()
		args.Seq, args.Hash, args.Time = last.Seq, last.ID().String(), string(ts)
	}
	fresh := dir + ".new-" + stamp
	if err := os.Mkdir(fresh, st.Mode().Perm()); err != nil {
		return "", rec, fmt.Errorf("audit rebase: %w", err)
	}
	if rec, err = writeRebaseRecord(fresh, args, now); err != nil {
		os.RemoveAll(fresh)
		return "", rec, err
	}
	if err := chownTree(fresh, st); err != nil {
		os.RemoveAll(fresh)
		return "", rec, err
	}
	if err := swapDirs(fresh, dir); err != nil {
		os.RemoveAll(fresh)
		return "", rec, fmt.Errorf("audit rebase: %w", err)
	}
	// fresh now names the old log. The mirror is retired last: until then
	// a writer started in between refuses, as before the rebase.
	if err := os.Rename(fresh, aside); err != nil {
		return "", rec, fmt.Errorf("audit rebase: the old log is at %s: %w", fresh, err)
	}
	if cfg.Mirror != "" {
		err := os.Rename(cfg.Mirror, filepath.Join(aside, "broker-checkpoint.last"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", rec, fmt.Errorf("audit rebase: retire %s: %w", cfg.Mirror, err)
		}
		if err := syncDir(filepath.Dir(cfg.Mirror)); err != nil {
			return "", rec, fmt.Errorf("audit rebase: %w", err)
		}
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return "", rec, fmt.Errorf("audit rebase: %w", err)
	}
	return aside, rec, nil
}

// newestCheckpoint is the newest of dir's checkpoints and the mirror's.
func newestCheckpoint(dir, mirror string, v note.Verifiers) (*Checkpoint, error) {
	if v == nil {
		return nil, nil
	}
	var last *Checkpoint
	cps, err := ReadCheckpoints(dir, v)
	if err != nil {
		return nil, err
	}
	if len(cps) > 0 {
		last = &cps[len(cps)-1]
	}
	m, err := (&checkpointer{cfg: CheckpointConfig{Mirror: mirror, Verifier: v}}).readMirror()
	if err != nil {
		return nil, err
	}
	if m != nil && (last == nil || m.Seq > last.Seq) {
		last = m
	}
	return last, nil
}

// writeRebaseRecord starts the chain in the empty directory dir.
func writeRebaseRecord(dir string, args RebaseArgs, now func() time.Time) (wire.AuditRecord, error) {
	text, err := json.Marshal(args)
	if err != nil {
		return wire.AuditRecord{}, fmt.Errorf("audit rebase: %w", err)
	}
	session, err := wire.ParseSessionID(RebaseSession)
	if err != nil {
		return wire.AuditRecord{}, err
	}
	w, err := Open(dir, WithClock(now))
	if err != nil {
		return wire.AuditRecord{}, err
	}
	rec, err := w.Append(wire.AuditRecord{Session: session, Tool: RebaseTool, Arguments: string(text),
		SessionTaint: wire.Public, Decision: wire.DecisionApproved{Grant: "", Approver: args.Approver}})
	return rec, errors.Join(err, w.Close())
}

// chownTree gives dir and the files in it the owner of st, the old log's
// directory, so that the writer (brokerd's uid) can append to them.
func chownTree(dir string, st os.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("audit rebase: %w", err)
	}
	paths := []string{dir}
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	for _, p := range paths {
		if err := os.Lchown(p, int(sys.Uid), int(sys.Gid)); err != nil {
			return fmt.Errorf("audit rebase: %w", err)
		}
	}
	return nil
}

// swapDirs exchanges a and b atomically where the file system can, so that
// the audit directory is never missing; else b is moved to a's place after a
// is moved away, through a third name.
func swapDirs(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == nil || !(errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)) {
		return err
	}
	tmp := a + ".swap"
	if err := os.Rename(b, tmp); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		return err
	}
	return os.Rename(tmp, a)
}

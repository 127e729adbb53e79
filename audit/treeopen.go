package audit

import (
	"fmt"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/tlog"
)

// scanForResume checks the chain for Open and brings the tree up to date
// with it. With a checkpoint of the tree's form whose root the tree file
// still gives, it checks the chain from that checkpoint and rebuilds the
// tree's hashes after it from the records it reads there: O(log n) plus the
// records since the checkpoint. Otherwise (no checkpoint, a Legacy one, a
// tree file cut short or changed) it checks the whole log against the
// checkpoint and builds the whole tree, and says why.
func (w *Writer) scanForResume(last *Checkpoint) (*chainScan, error) {
	if w.noTree && last == nil {
		return scanDir(w.dir, true)
	}
	t, err := openTreeFile(w.dir)
	if err != nil {
		return nil, err
	}
	w.tree = t
	held := t.written
	from, why := treeStart(t, last)
	var s *chainScan
	if from != nil {
		if err = t.reset(int64(from.Seq)); err == nil {
			s, err = scanFrom(w.dir, *from, true, t)
		}
	} else {
		s, err = w.scanWhole(t, last)
	}
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, recoverHint)
	}
	switch {
	case why != "":
		w.say("audit: %s: built the Merkle tree of the %d records from the log", why, s.head.seq)
	case from != nil && held != tlog.StoredHashCount(int64(s.head.seq)):
		w.say("audit: %s held %d hashes, not the %d of the log's %d records (a crash before it was written out): rebuilt the records after seq %d from the log",
			TreeName, held, tlog.StoredHashCount(int64(s.head.seq)), s.head.seq, from.Seq)
	}
	return s, nil
}

// scanWhole checks every record, building the tree from nothing, and that
// the log reaches last and matches it.
func (w *Writer) scanWhole(t *treeFile, last *Checkpoint) (*chainScan, error) {
	if err := t.reset(0); err != nil {
		return nil, err
	}
	files, err := listDayFiles(w.dir)
	if err != nil {
		return nil, err
	}
	s := &chainScan{repair: true, tree: t}
	if last != nil {
		s.cps = []Checkpoint{*last}
	}
	if err := s.scan(w.dir, files, 0, chunkBytes, 0); err != nil {
		return nil, err
	}
	if len(s.cps) > 0 {
		return nil, last.mismatch(fmt.Sprintf("the log ends at seq %d: records were cut off", s.head.seq))
	}
	return s, nil
}

// treeStart is the checkpoint to check the chain from, its tree hashes
// trusted, or nil and why the tree is to be built from the whole log
// ("" when there is nothing to say: no checkpoint yet).
func treeStart(t *treeFile, last *Checkpoint) (*Checkpoint, string) {
	switch {
	case last == nil:
		return nil, ""
	case last.Legacy:
		return nil, fmt.Sprintf("the newest checkpoint (seq %d) is of the chain alone, signed before the tree: migrating", last.Seq)
	case t.written < tlog.StoredHashCount(int64(last.Seq)):
		return nil, fmt.Sprintf("%s holds %d hashes, fewer than the %d of the newest checkpoint's %d records", TreeName, t.written, tlog.StoredHashCount(int64(last.Seq)), last.Seq)
	}
	root, err := tlog.TreeHash(int64(last.Seq), hashReader{t})
	switch {
	case err != nil:
		return nil, fmt.Sprintf("%s cannot be read (%v)", TreeName, err)
	case wire.Hash32(root) != last.Root:
		return nil, fmt.Sprintf("%s does not give the root of the newest checkpoint (size %d)", TreeName, last.Seq)
	}
	return last, ""
}

// say logs what the Writer does not refuse but the owner should know.
func (w *Writer) say(format string, args ...any) {
	if w.logf != nil {
		w.logf(format, args...)
	}
}

// ConsistencyProof is the RFC 6962 consistency proof from the tree of old
// records to the tree of n, n at most the records written.
func (w *Writer) ConsistencyProof(old, n uint64) ([]wire.Hash32, error) {
	p, err := w.tree.proveTree(int64(n), int64(old))
	if err != nil {
		return nil, err
	}
	out := make([]wire.Hash32, len(p))
	for i, h := range p {
		out[i] = wire.Hash32(h)
	}
	return out, nil
}

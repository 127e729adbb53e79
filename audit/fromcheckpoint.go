package audit

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/mod/sumdb/tlog"
)

// VerifyAgainst is Verify that also checks the chain against cps (oldest
// first, as ReadCheckpoints returns them): the record of each checkpoint's
// seq must hash to its hash, and the log must reach the newest one.
func VerifyAgainst(dir string, cps []Checkpoint) (Result, error) {
	files, err := listDayFiles(dir)
	if err != nil {
		return Result{}, err
	}
	s := &chainScan{cps: cps, compact: &compactTree{}}
	if err := s.scan(dir, files, 0, chunkBytes, 0); err != nil {
		return Result{}, err
	}
	if len(s.cps) > 0 {
		cp := s.cps[len(s.cps)-1]
		return Result{}, fmt.Errorf("audit: the log ends at seq %d, but %s says it held seq %d: records were cut off", s.head.seq, cp.name(), cp.Seq)
	}
	return s.result(), nil
}

// VerifyFromCheckpoint checks only the chain after cp: that the record where
// cp says the chain ended has cp's seq and hash, and every line after it as
// Verify does. Its cost grows with the records since cp, not with the log.
func VerifyFromCheckpoint(dir string, cp Checkpoint) (Result, error) {
	s, err := scanFrom(dir, cp, false, nil)
	if err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

// scanFrom checks the chain from checkpoint cp to the end of the log.
func scanFrom(dir string, cp Checkpoint, repair bool, tree *treeFile) (*chainScan, error) {
	files, err := listDayFiles(dir)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(files, func(f dayFile) bool { return f.name == cp.End.File })
	if i < 0 {
		return nil, cp.mismatch("the file it ends in is gone: the log is shorter than it was")
	}
	head, leaf, err := checkpointedLine(filepath.Join(dir, cp.End.File), cp)
	if err != nil {
		return nil, err
	}
	if err := leafInTree(tree, cp, leaf); err != nil {
		return nil, err
	}
	s := &chainScan{repair: repair, head: head, records: cp.Seq, startLine: cp.End.Line, tree: tree}
	if err := s.scan(dir, files[i:], cp.End.Offset, chunkBytes, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// checkpointedLine reads the line that ends where cp says the chain ended
// and checks it is cp's record; it returns the chain's head there.
func checkpointedLine(path string, cp Checkpoint) (chainHead, tlog.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return chainHead{}, tlog.Hash{}, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return chainHead{}, tlog.Hash{}, fmt.Errorf("audit: %w", err)
	}
	if st.Size() < cp.End.Offset {
		return chainHead{}, tlog.Hash{}, cp.mismatch(fmt.Sprintf("the file holds %d bytes, not the %d it held: the log was cut short", st.Size(), cp.End.Offset))
	}
	nls, err := newlinesFromEnd(f, cp.End.Offset, 2)
	if err != nil || len(nls) == 0 || nls[0] != cp.End.Offset-1 {
		return chainHead{}, tlog.Hash{}, cp.mismatch("no line ends there: the log was changed")
	}
	start := int64(0)
	if len(nls) > 1 {
		start = nls[1] + 1
	}
	line := make([]byte, nls[0]-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return chainHead{}, tlog.Hash{}, fmt.Errorf("audit: %w", err)
	}
	e, err := parseEntry(line)
	if err == nil && (e.seq != cp.Seq || sha256.Sum256(line) != cp.Hash) {
		err = errors.New("another record")
	}
	if err != nil {
		return chainHead{}, tlog.Hash{}, cp.mismatch(fmt.Sprintf("the line there is not its record (%v): the log was changed", err))
	}
	return chainHead{seq: cp.Seq, hash: cp.Hash, time: e.time}, tlog.RecordHash(line), nil
}

// leafInTree checks that the record at cp's end is the last leaf of the
// tree whose root cp signs (treeStart checked the tree file gives that
// root): the chain hash beside a checkpoint is not signed, its root is.
func leafInTree(tree *treeFile, cp Checkpoint, leaf tlog.Hash) error {
	if tree == nil || cp.Legacy {
		return nil
	}
	tree.mu.Lock()
	hs, err := hashReader{tree}.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(cp.Seq)-1)})
	tree.mu.Unlock()
	if err != nil {
		return err
	}
	if hs[0] != leaf {
		return cp.mismatch("the record there is not the last leaf of the tree it signs: the log was changed")
	}
	return nil
}

// mismatch says where and how the log differs from what cp signed.
func (cp Checkpoint) mismatch(found string) *VerifyError {
	if cp.End.File == "" {
		return &VerifyError{Err: fmt.Errorf("%s signs a tree of %d records, but %s", cp.name(), cp.Seq, found)}
	}
	return &VerifyError{File: cp.End.File, Line: cp.End.Line,
		Err: fmt.Errorf("%s says seq %d with hash %s ends here, but %s", cp.name(), cp.Seq, cp.Hash, found)}
}

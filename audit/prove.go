package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/tlog"
)

// Proof is an RFC 6962 inclusion proof of one record in the tree a
// checkpoint signs: the record at Index (its seq less one) has leaf hash
// Leaf, and Hashes lead from it to Root, the root of the tree of Size.
type Proof struct {
	Index  uint64
	Size   uint64
	Root   wire.Hash32
	Leaf   wire.Hash32
	Hashes []wire.Hash32
	Line   []byte // the record as stored, without its newline
}

// Prove finds record seq in the log in dir and proves it is in the tree of
// cp, checking the proof before returning it: O(log n) reads of the tree
// file and of the log, whatever its size.
func Prove(dir string, seq uint64, cp Checkpoint) (Proof, error) {
	if cp.Legacy || seq == 0 || seq > cp.Seq {
		return Proof{}, fmt.Errorf("audit: no record %d in the tree of %d records that the checkpoint signs", seq, cp.Seq)
	}
	line, err := FindRecord(dir, seq)
	if err != nil {
		return Proof{}, err
	}
	f, err := openRegular(filepath.Join(dir, TreeName))
	if err != nil {
		return Proof{}, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	r := fileHashes{f: f, n: int64(cp.Seq)}
	p, err := tlog.ProveRecord(int64(cp.Seq), int64(seq-1), r)
	if err != nil {
		return Proof{}, err
	}
	leaf := tlog.RecordHash(line)
	if err := tlog.CheckRecord(p, int64(cp.Seq), tlog.Hash(cp.Root), int64(seq-1), leaf); err != nil {
		return Proof{}, fmt.Errorf("audit: record %d is not in the tree %s signs (%v): the log or %s was changed", seq, cp.name(), err, TreeName)
	}
	out := Proof{Index: seq - 1, Size: cp.Seq, Root: cp.Root, Leaf: wire.Hash32(leaf), Line: line}
	for _, h := range p {
		out.Hashes = append(out.Hashes, wire.Hash32(h))
	}
	return out, nil
}

// CheckCheckpoint checks that the log in dir still holds what cp signs, by
// proofs, reading O(log n) of the log and of the tree file: the record of
// cp's seq is where the log has it and, for a checkpoint of the tree's form,
// its leaf is the last of cp's tree (an inclusion proof against cp's root).
// A Legacy checkpoint is checked by the chain hash at its end position.
func CheckCheckpoint(dir string, cp Checkpoint) error {
	if cp.Legacy {
		return checkLegacy(dir, cp)
	}
	if _, err := Prove(dir, cp.Seq, cp); err != nil {
		var nf *notFound
		if errors.As(err, &nf) {
			return cp.mismatch(nf.Error() + ": the log is shorter than it was")
		}
		return fmt.Errorf("%w (%s)", err, cp.name())
	}
	return nil
}

// CheckConsistent checks, by a consistency proof from dir's tree file, that
// the tree of older is a prefix of the tree of newer, whose root the tree
// file must give.
func CheckConsistent(dir string, older, newer Checkpoint) error {
	if older.Legacy || newer.Legacy || older.Seq > newer.Seq {
		return nil
	}
	f, err := openRegular(filepath.Join(dir, TreeName))
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	r := fileHashes{f: f, n: int64(newer.Seq)}
	p, err := tlog.ProveTree(int64(newer.Seq), int64(older.Seq), r)
	if err == nil {
		err = tlog.CheckTree(p, int64(newer.Seq), tlog.Hash(newer.Root), int64(older.Seq), tlog.Hash(older.Root))
	}
	if err != nil {
		return fmt.Errorf("audit: %s (size %d) and %s (size %d) are not one log: no consistency proof holds (%v)", older.name(), older.Seq, newer.name(), newer.Seq, err)
	}
	return nil
}

func checkLegacy(dir string, cp Checkpoint) error {
	files, err := listDayFiles(dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.name == cp.End.File {
			_, _, err = checkpointedLine(filepath.Join(dir, cp.End.File), cp)
			return err
		}
	}
	return cp.mismatch("the file it ends in is gone: the log is shorter than it was")
}

type notFound struct{ seq uint64 }

func (e *notFound) Error() string { return fmt.Sprintf("the log holds no record %d", e.seq) }

// FindRecord returns the stored line of record seq: a binary search over
// the day files by their first record, then over the file's bytes by the
// records at line starts, then a short scan.
func FindRecord(dir string, seq uint64) ([]byte, error) {
	files, err := listDayFiles(dir)
	if err != nil {
		return nil, err
	}
	lo, hi := 0, len(files) // the file is the last whose first record is at most seq
	for lo < hi {
		mid := (lo + hi) / 2
		first, err := firstSeq(filepath.Join(dir, files[mid].name))
		if err != nil {
			return nil, err
		}
		if first != 0 && first <= seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return nil, &notFound{seq}
	}
	return findInFile(filepath.Join(dir, files[lo-1].name), seq)
}

func firstSeq(path string) (uint64, error) {
	f, err := openRegular(path)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	_, e, err := lineAt(f, 0)
	if err != nil {
		return 0, nil // an empty file, or one whose first line does not parse
	}
	return e.seq, nil
}

// findInFile searches one day file for record seq.
func findInFile(path string, seq uint64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	lo, hi := int64(0), st.Size() // a line starting at lo has a seq at most seq
	for hi-lo > 64<<10 {
		mid := lo + (hi-lo)/2
		start, e, err := lineAt(f, mid)
		if err != nil || start >= hi {
			break // a torn line there: scan from lo
		}
		if e.seq <= seq {
			lo = start
		} else {
			hi = start
		}
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, lo, st.Size()-lo), 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("audit: %s: a line longer than the search reads", path)
		}
		if len(line) == 0 || line[len(line)-1] != '\n' {
			return nil, &notFound{seq}
		}
		line = line[:len(line)-1]
		if e, perr := parseEntry(line); perr == nil && e.seq == seq {
			return bytes.Clone(line), nil
		} else if perr == nil && e.seq > seq {
			return nil, &notFound{seq}
		}
	}
}

// lineAt reads the first whole line that starts at off or after it (off
// itself when it is 0), returning where it starts and what it holds.
func lineAt(f *os.File, off int64) (int64, entry, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, entry{}, err
	}
	start := off
	if off > 0 {
		start = off - 1
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, start, st.Size()-start), 64<<10)
	if off > 0 {
		skip, err := br.ReadSlice('\n')
		if err != nil {
			return 0, entry{}, err
		}
		start += int64(len(skip))
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, entry{}, err
	}
	e, err := parseEntry(line[:len(line)-1])
	return start, e, err
}

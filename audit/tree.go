package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle tree: beside the hash chain, every record is a leaf of an
// RFC 6962 tree (C2SP merkle-tree), its leaf data the stored line without
// its newline, the very bytes the chain hashes. tlog (golang.org/x/mod's,
// the Go checksum database's) defines which node hashes a tree of n leaves
// stores; the Writer keeps them in TreeName beside the log, one 32-byte
// hash after another in tlog's stored-hash order, so that the tree's root at
// any size, an inclusion proof and a consistency proof each read O(log n)
// hashes, and appending a record stores on average two.
//
// The file is derived data: every hash in it follows from the log. It is
// written without an fsync of its own on each batch, and fsynced before a
// checkpoint signs its root, so the hashes up to the newest checkpoint
// survive a crash; Open checks them against that checkpoint's root and
// rebuilds from the log whatever follows (or all of it, when they do not
// match), and says so.

// TreeName is the file in the audit directory that holds the tree's stored
// hashes.
const TreeName = "tree.hashes"

// flushHashes is how many stored hashes the Writer keeps in memory before
// it writes them to the file.
const flushHashes = 4096

// treeFile is the stored hashes of the tree over n records: those in the
// file, then pending ones not yet written.
type treeFile struct {
	mu      sync.Mutex
	path    string
	closed  bool // f is closed; every hash was written first
	f       *os.File
	n       int64       // the records the tree holds
	written int64       // stored hashes in the file
	pending []tlog.Hash // stored hashes after them
}

// openTreeFile opens (creating it) the tree file of dir for writing.
func openTreeFile(dir string) (*treeFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, TreeName), os.O_RDWR|os.O_CREATE, dayFileMode)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	return &treeFile{path: f.Name(), f: f, written: st.Size() / tlog.HashSize}, nil
}

// reset keeps the stored hashes of the first n records and drops the rest;
// the caller knows the kept ones are right (they give a checkpoint's root).
func (t *treeFile) reset(n int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := tlog.StoredHashCount(n)
	if err := t.f.Truncate(keep * tlog.HashSize); err != nil {
		return fmt.Errorf("audit: %s: %w", TreeName, err)
	}
	t.n, t.written, t.pending = n, keep, t.pending[:0]
	return nil
}

// addHash makes the record hash h the next leaf; mu is held.
func (t *treeFile) addHash(h tlog.Hash) error {
	hashes, err := tlog.StoredHashesForRecordHash(t.n, h, hashReader{t})
	if err != nil {
		return fmt.Errorf("audit: %s: %w", TreeName, err)
	}
	t.pending = append(t.pending, hashes...)
	t.n++
	if len(t.pending) >= flushHashes {
		return t.writePending()
	}
	return nil
}

// writePending writes the pending hashes to the file; mu is held.
func (t *treeFile) writePending() error {
	if len(t.pending) == 0 {
		return nil
	}
	buf := make([]byte, 0, len(t.pending)*tlog.HashSize)
	for _, h := range t.pending {
		buf = append(buf, h[:]...)
	}
	if _, err := t.f.WriteAt(buf, t.written*tlog.HashSize); err != nil {
		return fmt.Errorf("audit: write %s: %w", TreeName, err)
	}
	t.written += int64(len(t.pending))
	t.pending = t.pending[:0]
	return nil
}

// sync writes and fsyncs every hash of the tree and returns its root at
// n records, n at most those it holds; the fsync runs without mu, beside
// appends.
func (t *treeFile) sync(n int64) (tlog.Hash, error) {
	t.mu.Lock()
	err := t.writePending()
	var root tlog.Hash
	switch {
	case err != nil:
	case n > t.n:
		err = fmt.Errorf("audit: a root at %d records of a tree of %d", n, t.n)
	default:
		root, err = tlog.TreeHash(n, hashReader{t})
	}
	t.mu.Unlock()
	if err != nil {
		return tlog.Hash{}, err
	}
	if err := t.f.Sync(); err != nil {
		return tlog.Hash{}, fmt.Errorf("audit: fsync %s: %w", TreeName, err)
	}
	return root, nil
}

// proveTree is the consistency proof from the tree of old records to the
// one of n, n at most the records held.
func (t *treeFile) proveTree(n, old int64) (tlog.TreeProof, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n > t.n || old > n {
		return nil, fmt.Errorf("audit: no consistency proof from %d to %d records in a tree of %d", old, n, t.n)
	}
	if !t.closed {
		return tlog.ProveTree(n, old, hashReader{t})
	}
	// After Close, for the checkpoint of the clean stop, which brokerd
	// hands the witness once the Writer is closed.
	f, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	return tlog.ProveTree(n, old, fileHashes{f: f, n: t.n})
}

func (t *treeFile) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return errors.Join(t.writePending(), t.f.Close())
}

// hashReader reads t's stored hashes, pending ones included; t.mu is held.
type hashReader struct{ t *treeFile }

func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x >= r.t.written {
			if x-r.t.written >= int64(len(r.t.pending)) {
				return nil, fmt.Errorf("audit: %s has no hash %d", TreeName, x)
			}
			out[i] = r.t.pending[x-r.t.written]
			continue
		}
		if _, err := r.t.f.ReadAt(out[i][:], x*tlog.HashSize); err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", TreeName, err)
		}
	}
	return out, nil
}

// fileHashes reads stored hashes from a tree file opened for reading only
// (audit prove, audit verify): the hashes of at most n records.
type fileHashes struct {
	f io.ReaderAt
	n int64
}

func (r fileHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	limit := tlog.StoredHashCount(r.n)
	for i, x := range indexes {
		if x >= limit {
			return nil, fmt.Errorf("audit: %s: hash %d is past the tree of %d records", TreeName, x, r.n)
		}
		if _, err := r.f.ReadAt(out[i][:], x*tlog.HashSize); err != nil {
			return nil, fmt.Errorf("audit: read %s: %w (rebuilt when brokerd next starts)", TreeName, err)
		}
	}
	return out, nil
}

// compactTree is the root of a tree built leaf by leaf in O(log n) memory,
// for the verifier, which reads the log once and needs the root at every
// checkpoint's size: one complete subtree's hash per 1 bit of n.
type compactTree struct {
	n     int64
	stack []tlog.Hash
}

func (c *compactTree) add(leaf tlog.Hash) {
	c.stack = append(c.stack, leaf)
	for n := c.n; n&1 == 1; n >>= 1 {
		l := len(c.stack)
		c.stack[l-2] = tlog.NodeHash(c.stack[l-2], c.stack[l-1])
		c.stack = c.stack[:l-1]
	}
	c.n++
}

// root is the tree's root (RFC 6962: SHA-256 of nothing for no leaves).
func (c *compactTree) root() tlog.Hash {
	if c.n == 0 {
		h, _ := tlog.TreeHash(0, nil)
		return h
	}
	h := c.stack[len(c.stack)-1]
	for i := len(c.stack) - 2; i >= 0; i-- {
		h = tlog.NodeHash(c.stack[i], h)
	}
	return h
}

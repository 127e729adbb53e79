package audit

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/tlog"
)

// chainHead is the last entry the chain accepted; the zero value is the
// state before the first record ever.
type chainHead struct {
	seq  uint64
	hash wire.Hash32
	time wire.Timestamp
}

// tornRun is a run of lines that do not parse, waiting for the recovery
// record that must follow it. Usually it is one torn line; it is longer when
// the writer crashed again while writing that recovery record, and then the
// next recovery record describes all of it, inner newlines included.
type tornRun struct {
	open  bool
	start position
	why   error // why the run's first line does not parse
	lines int
	n     uint64    // bytes, without a newline after the last line
	h     hash.Hash // over the same bytes
}

// chainScan reads a log line by line and checks the chain. Verify uses it
// strictly; Open uses it in repair mode, where a torn run or a missing
// newline at the very end of the log is returned for repair, not an error.
type chainScan struct {
	repair    bool
	head      chainHead
	records   uint64
	files     int
	torn      int          // lines accepted as torn
	run       tornRun      // open at the end only in repair mode
	noNewline bool         // the log's last line has no newline (repair mode)
	lastFile  *dayFile     // the newest day file, if any
	endLine   int          // the lines of the newest day file
	startLine int          // the lines of the first file before the scan's start
	cps       []Checkpoint // checkpoints the chain has yet to reach, oldest first
	// tree, when set, takes each record as its next leaf (Open); compact,
	// when set, does for the verifier. Either gives the root that each
	// checkpoint in cps must have at its size.
	tree    *treeFile
	compact *compactTree
}

// scanDir checks every day file of dir in date order.
func scanDir(dir string, repair bool) (*chainScan, error) {
	return scanDirWith(dir, repair, chunkBytes, 0)
}

// scanDirWith is scanDir with chunks cut at target bytes and that many
// parsing workers (GOMAXPROCS when zero); tests vary both.
func scanDirWith(dir string, repair bool, target, workers int) (*chainScan, error) {
	files, err := listDayFiles(dir)
	if err != nil {
		return nil, err
	}
	s := &chainScan{repair: repair}
	if err := s.scan(dir, files, 0, target, workers); err != nil {
		return nil, err
	}
	return s, nil
}

// scan checks files in order, starting at offset from in the first.
func (s *chainScan) scan(dir string, files []dayFile, from int64, target, workers int) error {
	p := startPipeline(dir, files, from, target, workers, s.tree != nil || s.compact != nil)
	defer p.finish()
	if err := s.chunks(p, files); err != nil {
		return err
	}
	if len(files) > 0 {
		s.lastFile = &files[len(files)-1]
	}
	if s.run.open && !s.repair {
		return s.runFailure(errors.New("no recovery record follows it"))
	}
	return nil
}

// chunks checks the lines of every chunk in order, as the workers finish
// parsing them.
func (s *chainScan) chunks(p *pipeline, files []dayFile) error {
	n := 0 // the number of the last line checked in the current file
	for c := range p.ordered {
		f := files[c.file]
		if c.openErr != nil {
			return fmt.Errorf("audit: %w", c.openErr)
		}
		if c.file >= s.files {
			s.files, n = c.file+1, 0
			if c.file == 0 {
				n = s.startLine
			}
		}
		<-c.parsed
		if err := s.chunk(c, f, &n, c.file == len(files)-1); err != nil {
			return err
		}
		s.endLine = n
		p.done(c)
	}
	return nil
}

// chunk checks one chunk's lines; n counts the file's lines so far, and
// last says whether the file is the newest.
func (s *chainScan) chunk(c *chunk, f dayFile, n *int, last bool) error {
	for i, l := range c.lines {
		*n++
		pos := position{f.name, *n}
		switch b := c.data[l.start:l.end]; {
		case l.long:
			return s.fail(pos.errorf("line is longer than %d bytes", MaxLine))
		case c.tail && i == len(c.lines)-1:
			return s.lastLine(pos, f.day, b, l, last)
		default:
			if err := s.line(pos, f.day, b, l); err != nil {
				return err
			}
		}
	}
	switch {
	case c.tooLong:
		*n++
		return s.fail(position{f.name, *n}.errorf("line is longer than %d bytes", MaxLine))
	case c.err != nil:
		return fmt.Errorf("audit: %s: %w", f.name, c.err)
	}
	return nil
}

// lastLine handles a file's final line when it has no newline: a torn write,
// or one still in progress. That is an error, except at the log's very end
// when the writer is opening the log to repair it.
func (s *chainScan) lastLine(pos position, day int64, b []byte, l parsedLine, last bool) error {
	if err := s.line(pos, day, b, l); err != nil {
		return err
	}
	if s.repair && last {
		s.noNewline = true
		return nil
	}
	if !last {
		return s.fail(pos.errorf("no newline at the end of the file, yet a later file follows"))
	}
	if s.run.open {
		return s.runFailure(errors.New("no recovery record follows it before the file ends without a newline " + tornHint))
	}
	return pos.errorf("no newline at the end %s", tornHint)
}

const tornHint = "(a torn write, or one still in progress; the writer recovers a torn line when it next opens the log)"

// line checks one line, given without its newline, with what a worker
// found in it.
func (s *chainScan) line(pos position, day int64, b []byte, l parsedLine) error {
	e, perr := l.e, l.perr
	if s.run.open {
		return s.inRun(pos, day, b, l)
	}
	if perr != nil {
		s.startRun(pos, b, perr)
		return nil
	}
	if e.recovery {
		return pos.errorf("a recovery record, but no torn line comes before it")
	}
	if err := s.check(e, day); err != nil {
		return &VerifyError{File: pos.file, Line: pos.line, Err: err}
	}
	return s.commit(pos, e, l)
}

// inRun handles a line that follows a torn line: it is another line that
// does not parse, or the recovery record that describes the run.
func (s *chainScan) inRun(pos position, day int64, b []byte, l parsedLine) error {
	e := l.e
	if l.perr != nil {
		s.extendRun(b)
		return nil
	}
	if !e.recovery {
		return s.runFailure(fmt.Errorf("line %d of %s follows it but is not a recovery record", pos.line, pos.file))
	}
	if n, sum := s.run.n, s.runSum(); e.torn.TornBytes != n || e.torn.TornSHA256 != sum {
		return s.runFailure(fmt.Errorf("the recovery record at line %d of %s describes %d bytes with SHA-256 %s, not these %d bytes with SHA-256 %s",
			pos.line, pos.file, e.torn.TornBytes, e.torn.TornSHA256, n, sum))
	}
	if err := s.check(e, day); err != nil {
		return pos.errorf("recovery record: %w", err)
	}
	if err := s.commit(pos, e, l); err != nil {
		return err
	}
	s.torn += s.run.lines
	s.run.open = false
	return nil
}

// check tests e against the chain so far and the day of the file it is in.
func (s *chainScan) check(e entry, day int64) error {
	switch {
	case e.seq != s.head.seq+1:
		return fmt.Errorf("seq %d, want %d", e.seq, s.head.seq+1)
	case e.prev != s.head.hash && s.head.seq == 0:
		return fmt.Errorf("prev %s, but the first record's prev is 64 zeros", e.prev)
	case e.prev != s.head.hash:
		return fmt.Errorf("prev %s is not %s, the hash of the record before it", e.prev, s.head.hash)
	case e.time < s.head.time:
		return fmt.Errorf("time %s is before the previous record's %s", e.time, s.head.time)
	case dayOf(e.time) != day:
		return fmt.Errorf("time %s is not on the date the file is named for", e.time)
	}
	return nil
}

// commit moves the chain on to e, after checking it against any checkpoint
// of its seq: its chain hash, and the tree's root once e is its last leaf.
func (s *chainScan) commit(pos position, e entry, l parsedLine) error {
	if err := s.addLeaf(l.leaf); err != nil {
		return err
	}
	for len(s.cps) > 0 && s.cps[0].Seq <= e.seq {
		if cp := s.cps[0]; cp.Seq == e.seq {
			if err := s.matches(pos, e, l.sum, cp); err != nil {
				return err
			}
		}
		s.cps = s.cps[1:]
	}
	s.head = chainHead{seq: e.seq, hash: l.sum, time: e.time}
	s.records++
	return nil
}

func (s *chainScan) addLeaf(leaf tlog.Hash) error {
	switch {
	case s.tree != nil:
		s.tree.mu.Lock()
		defer s.tree.mu.Unlock()
		return s.tree.addHash(leaf)
	case s.compact != nil:
		s.compact.add(leaf)
	}
	return nil
}

// matches checks the record of cp's seq against cp.
func (s *chainScan) matches(pos position, e entry, sum [32]byte, cp Checkpoint) error {
	if cp.Hash != (wire.Hash32{}) && cp.Hash != sum {
		return pos.errorf("seq %d hashes to %s, but %s says %s: the log was rewritten", e.seq, wire.Hash32(sum), cp.name(), cp.Hash)
	}
	if cp.Legacy {
		return nil
	}
	root, err := s.root(e.seq)
	if err != nil {
		return err
	}
	if root != cp.Root {
		return pos.errorf("the Merkle tree of the %d records up to here has root %s, but %s says %s: the log was rewritten",
			e.seq, b64(root[:]), cp.name(), b64(cp.Root[:]))
	}
	return nil
}

// root is the tree's root over the first n records, n the records so far.
func (s *chainScan) root(n uint64) (wire.Hash32, error) {
	switch {
	case s.tree != nil:
		s.tree.mu.Lock()
		defer s.tree.mu.Unlock()
		h, err := tlog.TreeHash(int64(n), hashReader{s.tree})
		return wire.Hash32(h), err
	case s.compact != nil:
		return wire.Hash32(s.compact.root()), nil
	}
	return wire.Hash32{}, errors.New("audit: no tree to check a checkpoint's root against")
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func (s *chainScan) startRun(pos position, b []byte, why error) {
	if s.run.h == nil {
		s.run.h = sha256.New()
	}
	s.run.h.Reset()
	s.run.h.Write(b)
	s.run.open, s.run.start, s.run.why = true, pos, why
	s.run.lines, s.run.n = 1, uint64(len(b))
}

func (s *chainScan) extendRun(b []byte) {
	s.run.h.Write([]byte{'\n'})
	s.run.h.Write(b)
	s.run.lines++
	s.run.n += 1 + uint64(len(b))
}

func (s *chainScan) runSum() (sum wire.Hash32) {
	s.run.h.Sum(sum[:0])
	return sum
}

// runFailure reports an open run as the first bad line: its first line does
// not parse and nothing describes it.
func (s *chainScan) runFailure(reason error) *VerifyError {
	more := ""
	switch s.run.lines {
	case 1:
	case 2:
		more = " (nor does the line after it)"
	default:
		more = fmt.Sprintf(" (nor do the %d lines after it)", s.run.lines-1)
	}
	return s.run.start.errorf("does not parse (%w)%s, and %w", s.run.why, more, reason)
}

// fail reports err, or the open run if there is one, since it began earlier.
func (s *chainScan) fail(err *VerifyError) error {
	if s.run.open {
		return s.runFailure(fmt.Errorf("then line %d of %s: %w", err.Line, err.File, err.Err))
	}
	return err
}

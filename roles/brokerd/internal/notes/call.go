package notes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"boxmaker/roles/internal/sandbox"
	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// Call is one call running with part of memory/ mounted. Calls that
// run alongside each other see each other: a reader is labelled with what
// a writer running at the same time may have left for it, and a writer's
// files with what another writer left in them meanwhile.
type Call struct {
	reads  []string // the parts of memory/ mounted, relative to it
	writes []string // those of them mounted writable
	who    Writer
	// taint is a writer's label: while it runs, what it is known to be at
	// least; once it ended, what its files got.
	taint      Label
	since      int64  // ns, when a writer began
	start, end uint64 // s.ev at begin and at finish; end is 0 while it runs
	pending    string // a writer's record in broker/notes/pending/
}

// Writer names the call and says how high its session is now: its
// taint and untrusted flag joined with the grant's labels, which the
// session takes on when the result returns. A note is labelled with the
// higher of the session before and after the result (DESIGN.md section 12).
type Writer struct {
	Session wire.SessionID
	Call    wire.CallID
	Base    func() (Label, error)
}

// Result is what labels say of a call once it ended: read, the join of
// every label its sandbox could read; problem, why some of what it wrote
// was labelled as a whole folder instead of file by file.
type Result struct {
	Read    Label
	Problem error
}

// pendingRecord is one file of broker/notes/pending/: a writer running
// now. A crash before its labels are durable leaves it, and the next start
// labels what changed under its roots since it began (recoverPending).
type pendingRecord struct {
	Session   wire.SessionID `json:"session"`
	Call      wire.CallID    `json:"call"`
	Class     wire.DataClass `json:"class"`
	Untrusted bool           `json:"untrusted"`
	Roots     []string       `json:"roots"`
	SinceNS   uint64         `json:"since_ns"`
}

// memoryParts names the parts of memory/ among a sandbox's mounts: a mount
// at or below memory/ is that part, a mount that holds memory/ is all of it,
// whatever the tool.
func (s *Store) memoryParts(mounts []sandbox.Mount) (reads, writes []string) {
	real, err := filepath.EvalSymlinks(s.memory)
	if err != nil {
		return nil, nil // no memory/, so no mount can show any of it
	}
	for _, m := range mounts {
		var part string
		switch {
		case within(real, m.Host):
			part, _ = filepath.Rel(real, m.Host)
		case within(m.Host, real):
			part = "."
		default:
			continue
		}
		reads = append(reads, part)
		if m.Writable {
			writes = append(writes, part)
		}
	}
	return reads, writes
}

// begin registers a call about to run with mounts. For a writer it first
// makes a pending record durable, so that what the sandbox writes is
// labelled even if brokerd dies while it runs. A call without memory/
// mounted gets nil, which finish accepts.
func (s *Store) Begin(mounts []sandbox.Mount, who Writer) (*Call, error) {
	reads, writes := s.memoryParts(mounts)
	if len(reads) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return nil, s.broken
	}
	s.ev++
	c := &Call{reads: reads, writes: writes, who: who, start: s.ev}
	if len(writes) > 0 {
		base, err := who.Base()
		if err != nil {
			return nil, err
		}
		c.taint = base.Join(s.readTaint(reads)).Join(s.alongside(c, reads))
		c.since = time.Now().UnixNano()
		rec := pendingRecord{Session: who.Session, Call: who.Call, Class: c.taint.Class, Untrusted: c.taint.Untrusted,
			Roots: writes, SinceNS: uint64(c.since)}
		data, err := wire.Marshal(&rec)
		if err != nil {
			return nil, err
		}
		c.pending = fmt.Sprintf("%s-%d-%d.json", who.Session, who.Call, c.start)
		if err := writeSynced(s.pendingDir(), c.pending, data); err != nil {
			return nil, err
		}
		if err := syncDir(s.pendingDir()); err != nil {
			return nil, err
		}
	}
	s.running[c] = true
	return c, nil
}

// alongside joins the labels of the writers other than c that ran while c
// has been running and could write where paths are.
func (s *Store) alongside(c *Call, paths []string) Label {
	var t Label
	consider := func(o *Call) {
		if o != c && (o.end == 0 || o.end > c.start) && overlapsAny(o.writes, paths) {
			t = t.Join(o.taint)
		}
	}
	for o := range s.running {
		consider(o)
	}
	for _, o := range s.ended {
		consider(o)
	}
	return t
}

func overlapsAny(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if overlap(x, y) {
				return true
			}
		}
	}
	return false
}

// finish ends c once its sandbox has exited, whether or not the tool did
// its work: it returns the join of the labels c's sandbox could read, and
// for a writer labels what it created or changed, durably, before it
// returns. An error means labels could not be written: the call's result
// must not be returned, and brokerd mounts no notes until it restarts (and
// relabels from the pending record, which stays).
//
// WARNING: the caller answers the call only after finish returned without
// error, and raises the session by the result's read taint before that.
// TestNoteLabelledBeforeTheResult proves a note is labelled by then.
func (s *Store) Finish(c *Call) (Result, error) {
	if c == nil {
		return Result{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.end(c)
	res := Result{Read: s.readTaint(c.reads).Join(s.alongside(c, c.reads))}
	if len(c.writes) == 0 {
		return res, nil
	}
	base, err := c.who.Base()
	if err != nil {
		s.broken = fmt.Errorf("note labels: session %s: %w", c.who.Session, err)
		return res, s.broken
	}
	c.taint = c.taint.Join(base).Join(res.Read)
	changes, problem := s.relabelAll(c.writes, writer{session: c.who.Session, call: c.who.Call, taint: c.taint, since: c.since})
	if err := s.commit(changes); err != nil {
		return res, err
	}
	res.Problem = problem
	os.Remove(filepath.Join(s.pendingDir(), c.pending)) // labels are durable; a lost removal only relabels
	return res, nil
}

// end takes c off the running calls; a writer stays known while a call
// that ran alongside it still runs.
func (s *Store) end(c *Call) {
	s.ev++
	c.end = s.ev
	delete(s.running, c)
	if len(c.writes) > 0 {
		s.ended = append(s.ended, c)
	}
	oldest := s.ev + 1
	for o := range s.running {
		oldest = min(oldest, o.start)
	}
	kept := s.ended[:0]
	for _, o := range s.ended {
		if o.end > oldest {
			kept = append(kept, o)
		}
	}
	clear(s.ended[len(kept):])
	s.ended = kept
}

// relabelAll walks each root a writer had mounted. A root whose walk fails
// (over the limits, or unreadable) gets a folder label instead, and the
// failure is returned as the problem.
func (s *Store) relabelAll(roots []string, w writer) (labelChanges, error) {
	var all labelChanges
	var problems []error
	memfd, memErr := s.openMemory()
	if errors.Is(memErr, os.ErrNotExist) {
		return all, nil
	}
	if memErr == nil {
		defer unix.Close(memfd)
	}
	for _, root := range roots {
		c, err := labelChanges{}, memErr
		if err == nil {
			c, err = s.relabel(memfd, root, w)
		}
		if err != nil {
			problems = append(problems, err)
			fl, ferr := s.folderLabel(root, w)
			if ferr != nil {
				problems = append(problems, ferr)
				continue
			}
			c = labelChanges{put: []*storedLabel{fl}}
		}
		all.put = append(all.put, c.put...)
		all.drop = append(all.drop, c.drop...)
	}
	return all, errors.Join(problems...)
}

// recoverPending finishes the writers a stop interrupted: what changed
// under their roots since each began is labelled with its label, joined
// with the labels of the others that were running with it.
func (s *Store) recoverPending() error {
	entries, err := os.ReadDir(s.pendingDir())
	if err != nil {
		return err
	}
	var recs []pendingRecord
	var names []string
	for _, e := range entries {
		file := filepath.Join(s.pendingDir(), e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			os.Remove(file)
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var r pendingRecord
		if err := wire.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("note labels: pending call %s: %w", file, err)
		}
		for _, root := range r.Roots {
			if c, err := cleanNotePath(root); err != nil || c != root {
				return fmt.Errorf("note labels: pending call %s: root %q is not a clean path in memory/", file, root)
			}
		}
		recs = append(recs, r)
		names = append(names, e.Name())
	}
	for _, r := range recs {
		t := Label{Class: r.Class, Untrusted: r.Untrusted}
		for _, o := range recs {
			if overlapsAny(r.Roots, o.Roots) {
				t = t.Join(Label{Class: o.Class, Untrusted: o.Untrusted})
			}
		}
		changes, problem := s.relabelAll(r.Roots, writer{session: r.Session, call: r.Call, taint: t, since: int64(r.SinceNS)})
		if problem != nil {
			s.log.Printf("note labels: session %s call %d: %v; its folders carry its label", r.Session, r.Call, problem)
		}
		if err := s.commit(changes); err != nil {
			return err
		}
		s.log.Printf("note labels: session %s call %d was running when brokerd stopped: %d files labelled as its", r.Session, r.Call, len(changes.put))
	}
	for _, n := range names {
		if err := os.Remove(filepath.Join(s.pendingDir(), n)); err != nil {
			return err
		}
	}
	if len(names) > 0 {
		return syncDir(s.pendingDir())
	}
	return nil
}

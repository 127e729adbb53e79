package notes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/internal/atomicfile"
	"boxmaker/wire"
)

// Store is brokerd's memory of who wrote what under memory/ (DESIGN.md
// section 12): one label per file a tool call created or changed, kept in
// broker/notes/labels/ (broker/ is never mounted), one file per label named
// by the SHA-256 of its path. A label never falls by itself: only a later
// call that changes the file replaces it (with a label at least as high,
// since that call could read the file), and only the owner lowers one.
//
// Changes are found by the kernel's change time: a file whose ctime is not
// older than the call's start (less slack for the clock's granularity) or
// whose inode carried a label at another path is looked at, and is hashed
// only when its stat differs from its label's (or its label's stat was
// taken too soon after a change to be trusted, as git's racy-clean rule).
// Everything else costs one fstatat. The sandbox cannot set a ctime.
type Store struct {
	memory string // memory/ as configured
	dir    string // broker/notes
	log    *log.Logger
	clock  func() time.Time // the times labels carry
	slack  time.Duration    // ctime granularity allowance; see Slack
	limits walkLimits

	mu      sync.Mutex
	labels  map[string]*storedLabel // by path relative to memory/
	byInode map[inodeKey]string     // file labels by the inode they were taken of
	broken  error                   // a label could not be written: no memory mounts until restart
	ev      uint64                  // counts begin and finish, to order call windows
	running map[*Call]bool          // calls with part of memory/ mounted, running now
	ended   []*Call                 // writers that ended while a running call ran
	walks   uint64                  // counts walks, to mark the labels each one saw
	hashed  int                     // files hashed since start, for tests and benchmarks
}

// Slack is how much older than a call's start a ctime may be and still
// count as the call's: the kernel stamps ctime from a coarse clock (one
// tick: 10 ms at HZ=100, the coarsest Linux has), so a write just after the
// start may carry a stamp just before it. Ten ticks is generous; its cost
// is that a file the owner changed in the 100 ms before a call is labelled
// as that call's. A wall clock stepped back by more than this while a call
// runs could hide a write from the walk.
const Slack = 100 * time.Millisecond

// storedLabel is one file of broker/notes/labels/.
type storedLabel struct {
	Path   string         `json:"path"`   // relative to memory/, clean
	Folder bool           `json:"folder"` // covers everything below Path
	Label  wire.NoteLabel `json:"label"`
	Stat   fileStat       `json:"stat"`    // the file as its hash was taken; zero for a folder
	SeenNS uint64         `json:"seen_ns"` // when Stat was taken
	seen   uint64         // the last walk that found the file
}

// fileStat is what decides whether a file changed without reading it.
type fileStat struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    uint64 `json:"size"`
	MtimeNS uint64 `json:"mtime_ns"`
	CtimeNS uint64 `json:"ctime_ns"`
}

type inodeKey struct{ dev, ino uint64 }

func (st fileStat) inode() inodeKey { return inodeKey{st.Dev, st.Ino} }

// trusted reports whether a stat equal to l's means the file is unchanged:
// not when l was taken within the slack of the file's last change, since a
// change in the same clock tick leaves the stamps equal.
func (l *storedLabel) trusted(slack time.Duration) bool {
	return l.Stat.CtimeNS+uint64(slack) < l.SeenNS
}

// Label is a class and an untrusted flag, joined by max and or: what a
// note is labelled with, and what a call that could read it takes on.
type Label struct {
	Class     wire.DataClass
	Untrusted bool
}

// Join is the higher of a and b in each half.
func (a Label) Join(b Label) Label {
	return Label{Class: max(a.Class, b.Class), Untrusted: a.Untrusted || b.Untrusted}
}

func taintOf(l wire.NoteLabel) Label { return Label{Class: l.Class, Untrusted: l.Untrusted} }

// Open loads the labels under dir and finishes the calls a crash
// interrupted (see recoverPending). A label file that does not parse is an
// error: brokerd does not start with labels missing, which would read lower.
func Open(memory, dir string, clock func() time.Time, lg *log.Logger) (*Store, error) {
	s := &Store{memory: memory, dir: dir, log: lg, clock: clock, slack: Slack, limits: defaultWalkLimits,
		labels: map[string]*storedLabel{}, byInode: map[inodeKey]string{}, running: map[*Call]bool{}}
	for _, d := range []string{s.labelDir(), s.pendingDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(s.labelDir())
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			os.Remove(filepath.Join(s.labelDir(), e.Name())) // a write a crash cut short
			continue
		}
		l, err := s.readLabel(e.Name())
		if err != nil {
			return nil, err
		}
		s.index(l)
	}
	if err := s.recoverPending(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) labelDir() string   { return filepath.Join(s.dir, "labels") }
func (s *Store) pendingDir() string { return filepath.Join(s.dir, "pending") }

// LabelFile names a path's label file: the SHA-256 of the path, so that no
// path (however long or odd) makes an odd file name.
func LabelFile(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:]) + ".json"
}

func (s *Store) readLabel(name string) (*storedLabel, error) {
	file := filepath.Join(s.labelDir(), name)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var l storedLabel
	if err := wire.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("note label %s: %w", file, err)
	}
	if clean, err := cleanNotePath(l.Path); err != nil || clean != l.Path || LabelFile(l.Path) != name {
		return nil, fmt.Errorf("note label %s: its path %q does not belong in this file", file, l.Path)
	}
	if (l.Label.SHA256 == nil) != l.Folder {
		return nil, fmt.Errorf("note label %s: a file's label has a sha256, a folder's none", file)
	}
	return &l, nil
}

// index puts l in memory; the caller has made it durable or read it from disk.
func (s *Store) index(l *storedLabel) {
	if old, ok := s.labels[l.Path]; ok {
		s.unindex(old)
	}
	s.labels[l.Path] = l
	if !l.Folder {
		s.byInode[l.Stat.inode()] = l.Path
	}
}

func (s *Store) unindex(l *storedLabel) {
	delete(s.labels, l.Path)
	if p, ok := s.byInode[l.Stat.inode()]; ok && p == l.Path && !l.Folder {
		delete(s.byInode, l.Stat.inode())
	}
}

// labelChanges is what one walk found: labels to write and paths whose
// labels go (their files are gone).
type labelChanges struct {
	put  []*storedLabel
	drop []string
}

// commit makes changes durable, then applies them in memory. Each label is
// written as a temporary file (O_EXCL), fsynced and renamed over the old;
// the directory is fsynced once at the end, before anything is answered.
// A failure leaves brokerd refusing memory mounts (broken) until a restart
// redoes the walk from the pending record the caller still holds.
func (s *Store) commit(c labelChanges) error {
	if len(c.put) == 0 && len(c.drop) == 0 {
		return nil
	}
	err := func() error {
		for _, l := range c.put {
			data, err := wire.Marshal(l)
			if err != nil {
				return err
			}
			if err := writeSynced(s.labelDir(), LabelFile(l.Path), data); err != nil {
				return err
			}
		}
		for _, p := range c.drop {
			if err := os.Remove(filepath.Join(s.labelDir(), LabelFile(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return syncDir(s.labelDir())
	}()
	if err != nil {
		s.broken = fmt.Errorf("note labels cannot be written (%w); brokerd mounts no notes until it restarts", err)
		return s.broken
	}
	for _, p := range c.drop {
		if l, ok := s.labels[p]; ok {
			s.unindex(l)
		}
	}
	for _, l := range c.put {
		s.index(l)
	}
	return nil
}

// writeSynced writes dir/name whole (atomicfile.Replace). The caller fsyncs
// dir.
func writeSynced(dir, name string, data []byte) error {
	return atomicfile.Replace(dir, name, data, 0o600)
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// cleanNotePath checks a path relative to memory/ and cleans it; "." is
// memory/ itself.
func cleanNotePath(p string) (string, error) {
	if p == "." {
		return p, nil
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%q is not a path inside memory/", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leaves memory/", p)
	}
	return c, nil
}

// under reports whether p is dir or lies below it, by whole components;
// every path is under ".".
func under(dir, p string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// overlap reports whether one path holds the other.
func overlap(a, b string) bool { return under(a, b) || under(b, a) }

// readTaint is the join of every label a sandbox that mounted paths could
// Read: each file label at or below a path, and each folder label that
// holds one. The caller holds s.mu.
func (s *Store) readTaint(paths []string) Label {
	var t Label
	for _, l := range s.labels {
		for _, p := range paths {
			if under(p, l.Path) || l.Folder && under(l.Path, p) {
				t = t.Join(taintOf(l.Label))
				break
			}
		}
	}
	return t
}

// labelFor is the label a file is shown with: its own, or the nearest
// folder label above it. The caller holds s.mu.
func (s *Store) labelFor(p string) (*storedLabel, bool) {
	if l, ok := s.labels[p]; ok {
		return l, true
	}
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		if l, ok := s.labels[dir]; ok && l.Folder {
			return l, true
		}
		if dir == "." || dir == "/" {
			return nil, false
		}
	}
}

// within reports whether path is dir or lies below it, for host paths.
func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

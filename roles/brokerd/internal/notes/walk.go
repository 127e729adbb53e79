package notes

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"
	"unicode/utf8"

	"boxmaker/roles/internal/nofollow"
	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// walkLimits bound one walk of a part of memory/: the sandbox that wrote
// there may have made it as large and as deep as its limits let it.
type walkLimits struct {
	files int // entries (files and folders) in one walk
	depth int // folders below the walk's root
}

var defaultWalkLimits = walkLimits{files: 100_000, depth: 32}

// errWalkLimit is wrapped by the error of a walk that met its limits.
var errWalkLimit = errors.New("over brokerd's walk limits")

// beneath is how every path under memory/ is opened: never through a
// symlink (the sandbox runs under brokerd's uid and may plant one), and
// never outside the descriptor it is resolved from.
var beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath goes through nofollow, not openat2 itself: under systemd,
// brokerd's RestrictSUIDSGID= makes openat2 fail with ENOSYS, and nofollow
// then walks the path with the same guarantees.
func openBeneath(dirfd int, name string, flags int) (int, error) {
	return nofollow.Open(dirfd, name, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: uint64(beneath)})
}

// openMemory opens memory/ itself, by its real path (the parts above it
// are the owner's, not a sandbox's).
func (s *Store) openMemory() (int, error) {
	real, err := filepath.EvalSymlinks(s.memory)
	if err != nil {
		return -1, err
	}
	return unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// visitFunc is called for each regular file: dirfd and name open it (name
// may have several components when the walk's root is the file itself).
type visitFunc func(dirfd int, name, rel string, st fileStat) error

// walk calls visit for every regular file at or below root (relative to
// memory/), in no particular order, and skips symlinks, devices, FIFOs and
// sockets. A root that does not exist is empty.
func (s *Store) walk(memfd int, root string, visit visitFunc) error {
	return s.walkWith(&walker{root: root, limits: s.limits, visit: visit}, memfd)
}

// walkWith walks w.root with w: walk's, or a lenient one for listing.
func (s *Store) walkWith(w *walker, memfd int) error {
	root, visit := w.root, w.visit
	if root == "." {
		// A fresh open, not a dup: a dup would share the listing's offset.
		fd, err := openBeneath(memfd, ".", unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		return w.dir(fd, ".", 0)
	}
	fd, err := openBeneath(memfd, root, unix.O_PATH)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memory/%s: %w", root, err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return visit(memfd, root, root, statOf(&st))
	case unix.S_IFDIR:
		dfd, err := openBeneath(memfd, root, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("memory/%s: %w", root, err)
		}
		return w.dir(dfd, root, 0)
	case unix.S_IFLNK:
		return fmt.Errorf("memory/%s is a symlink, which brokerd never follows", root)
	}
	return nil
}

type walker struct {
	root   string
	limits walkLimits
	visit  visitFunc
	count  int
	// skipped counts folders a lenient walk could not open (for listing
	// only: a walk that labels never skips what it cannot read).
	lenient bool
	skipped int
}

// dir walks the open folder fd (and closes it).
func (w *walker) dir(fd int, rel string, depth int) error {
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			if err := w.entry(fd, rel, e.Name(), depth); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || err == nil && len(entries) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("memory/%s: %w", rel, err)
		}
	}
}

func (w *walker) entry(fd int, rel, name string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since the listing
		}
		return fmt.Errorf("memory/%s: %w", path.Join(rel, name), err)
	}
	w.count++
	if w.count > w.limits.files {
		return fmt.Errorf("memory/%s holds more than %d files and folders, %w", w.root, w.limits.files, errWalkLimit)
	}
	child := path.Join(rel, name)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return w.visit(fd, name, child, statOf(&st))
	case unix.S_IFDIR:
		if depth+1 > w.limits.depth {
			return fmt.Errorf("memory/%s is more than %d folders deep, %w", child, w.limits.depth, errWalkLimit)
		}
		cfd, err := openBeneath(fd, name, unix.O_RDONLY|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if w.lenient && errors.Is(err, unix.EACCES) {
			w.skipped++
			return nil
		}
		if err != nil {
			return fmt.Errorf("memory/%s: %w", child, err)
		}
		return w.dir(cfd, child, depth+1)
	}
	return nil
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{Dev: uint64(st.Dev), Ino: st.Ino, Size: uint64(st.Size),
		MtimeNS: uint64(st.Mtim.Nano()), CtimeNS: uint64(st.Ctim.Nano())}
}

// hashAt hashes the regular file dirfd/name and returns the stat of what it
// read, taken on the open descriptor before reading. A file changed while
// it is read gets a new ctime, so the next walk looks at it again.
func (s *Store) hashAt(dirfd int, name string) (wire.Hash32, fileStat, error) {
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return wire.Hash32{}, fileStat{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.Hash32{}, fileStat{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return wire.Hash32{}, fileStat{}, fmt.Errorf("%s is no longer a regular file", name)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return wire.Hash32{}, fileStat{}, err
	}
	s.hashed++
	var sum wire.Hash32
	copy(sum[:], h.Sum(nil))
	return sum, statOf(&st), nil
}

// writer is who a walk attributes changes to, and the label they get.
type writer struct {
	session wire.SessionID
	call    wire.CallID
	taint   Label
	since   int64 // ns: changes from then on (less the slack) are the call's
}

// relabel walks root after a call that had it mounted writable and returns
// the labels to write: each file created or changed since w.since gets w's
// label, joined with the label it had if that was written during the call
// (by another call running alongside) and with the label of the path its
// inode had (a file or folder moved or linked within the mount). A file
// changed before the call keeps its label, whatever changed it. Labels of
// files no longer there go. The caller holds s.mu.
func (s *Store) relabel(memfd int, root string, w writer) (labelChanges, error) {
	s.walks++
	walk := s.walks
	threshold := uint64(max(w.since-int64(s.slack), 0))
	now, err := wire.TimestampOf(s.clock())
	if err != nil {
		return labelChanges{}, err
	}
	// A folder label inside root means a walk once failed there: what it
	// covers may have been moved out of it, so every unlabelled file here
	// is taken as the writer's.
	blanket := false
	for p, l := range s.labels {
		if l.Folder && under(root, p) {
			blanket = true
		}
	}
	run := walkRun{walk: walk, threshold: threshold, blanket: blanket, now: now}
	var c labelChanges
	err = s.walk(memfd, root, func(dirfd int, name, rel string, st fileStat) error {
		if !utf8.ValidString(rel) {
			// A label names its file in JSON, which holds only UTF-8;
			// the folder's label stands in for this one.
			return fmt.Errorf("memory/%s holds a file whose name is not UTF-8 (%q)", root, rel)
		}
		l, err := s.relabelFile(dirfd, name, rel, st, w, run)
		if l != nil {
			c.put = append(c.put, l)
		}
		return err
	})
	if err != nil {
		return labelChanges{}, err
	}
	for p, l := range s.labels {
		if !l.Folder && under(root, p) && l.seen != walk {
			c.drop = append(c.drop, p)
		}
	}
	return c, nil
}

// walkRun is what one relabel walk decides each file by.
type walkRun struct {
	walk      uint64 // marks the labels this walk found
	threshold uint64 // ns: a ctime from then on is the call's
	blanket   bool   // a folder label lies in the root: every unlabelled file is the call's
	now       wire.Timestamp
}

// relabelFile decides one file of a walk and returns its new label, or nil
// when its label (or its having none) stands. The caller holds s.mu.
func (s *Store) relabelFile(dirfd int, name, rel string, st fileStat, w writer, r walkRun) (*storedLabel, error) {
	old := s.labels[rel]
	if old != nil && old.Folder {
		old = nil
	}
	if old != nil {
		old.seen = r.walk
	}
	movedFrom, moved := s.byInode[st.inode()]
	moved = moved && movedFrom != rel
	if st.CtimeNS < r.threshold && !moved && !(r.blanket && old == nil) {
		return nil, nil // untouched since before the call: one stat, nothing more
	}
	// A label another call wrote while this one ran may cover this one's
	// writes too: the two may have written the file in turn.
	during := old != nil && old.SeenNS >= r.threshold
	var sum wire.Hash32
	var hst fileStat
	hashed := false
	if old != nil && old.Stat == st {
		same := old.trusted(s.slack)
		if !same { // the racy case: the same stat may hide a change in the same tick
			var err error
			if sum, hst, err = s.hashAt(dirfd, name); err != nil {
				return nil, s.hashError(rel, err)
			}
			hashed, same = true, *old.Label.SHA256 == sum && old.Stat == hst
		}
		if same {
			t := taintOf(old.Label)
			if !during || t.Join(w.taint) == t {
				return nil, nil // labelled already as it is
			}
			raised := *old
			t = t.Join(w.taint)
			raised.Label.Class, raised.Label.Untrusted, raised.Label.Endorsed = t.Class, t.Untrusted, nil
			return &raised, nil
		}
	}
	if !hashed {
		var err error
		if sum, hst, err = s.hashAt(dirfd, name); err != nil {
			return nil, s.hashError(rel, err)
		}
	}
	t := w.taint
	if during {
		t = t.Join(taintOf(old.Label))
	}
	if from, ok := s.labels[movedFrom]; moved && ok {
		t = t.Join(taintOf(from.Label))
	}
	return &storedLabel{Path: rel, Stat: hst, SeenNS: uint64(time.Now().UnixNano()), seen: r.walk, Label: wire.NoteLabel{
		Class: t.Class, Untrusted: t.Untrusted, Session: w.session, Call: w.call, SHA256: &sum, Time: r.now}}, nil
}

// hashError words a failed hash; a file gone since the listing is no error.
func (s *Store) hashError(rel string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("memory/%s: %w", rel, err)
}

// folderLabel is the label a walk that failed leaves on its root, so that
// everything below it reads at least as high as the writer was.
func (s *Store) folderLabel(root string, w writer) (*storedLabel, error) {
	now, err := wire.TimestampOf(s.clock())
	if err != nil {
		return nil, err
	}
	t := w.taint
	if old, ok := s.labels[root]; ok {
		t = t.Join(taintOf(old.Label))
	}
	return &storedLabel{Path: root, Folder: true, Label: wire.NoteLabel{
		Class: t.Class, Untrusted: t.Untrusted, Session: w.session, Call: w.call, Time: now}}, nil
}

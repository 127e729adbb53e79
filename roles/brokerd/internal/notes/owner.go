package notes

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// What the owner asks of the labels (DESIGN.md section 12): every note
// with its label, one note, its label, and a lower label by endorsement.

// list walks all of memory/ (within the walk limits) and joins the labels.
func (s *Store) List() ([]wire.NoteEntry, error) {
	s.mu.Lock()
	labels := make(map[string]storedLabel, len(s.labels))
	for p, l := range s.labels {
		labels[p] = *l
	}
	s.mu.Unlock()
	var out []wire.NoteEntry
	memfd, err := s.openMemory()
	switch {
	case err == nil:
		defer unix.Close(memfd)
		w := &walker{root: ".", limits: s.limits, lenient: true, visit: func(_ int, _, rel string, _ fileStat) error {
			e := wire.NoteEntry{Path: strings.ToValidUTF8(rel, "\uFFFD")}
			if l, ok := labels[rel]; ok && !l.Folder {
				e.Label = &l.Label
			}
			out = append(out, e)
			return nil
		}}
		if err := s.walkWith(w, memfd); err != nil {
			return nil, err
		}
		if w.skipped > 0 {
			s.log.Printf("notes list: %d folders under memory/ are not readable by brokerd and are not listed", w.skipped)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	for _, l := range labels {
		if l.Folder {
			out = append(out, wire.NoteEntry{Path: l.Path, Folder: true, Label: &l.Label})
		}
	}
	slices.SortFunc(out, func(a, b wire.NoteEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// ReadNote reads memory/p as a sandbox cannot mislead brokerd into:
// beneath memory/, through no symlink, a regular file; at most limit+1
// bytes, so that the caller can tell a longer note.
func (s *Store) ReadNote(p string, limit int) ([]byte, error) {
	memfd, err := s.openMemory()
	if err != nil {
		return nil, err
	}
	defer unix.Close(memfd)
	fd, err := openBeneath(memfd, p, unix.O_RDONLY|unix.O_NONBLOCK)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return nil, fmt.Errorf("%s: a symlink is in the way, and brokerd never follows one under memory/", p)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s: no such file in memory/", p)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return io.ReadAll(io.LimitReader(f, int64(limit)+1))
}

// LabelOf is the label memory/p is read with: its own, or that of the
// nearest folder label above it, at labelPath; ok is false for a note no
// tool call wrote, which is the owner's.
func (s *Store) LabelOf(p string) (label wire.NoteLabel, labelPath string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labelFor(p)
	if !ok {
		return wire.NoteLabel{}, "", false
	}
	return l.Label, l.Path, true
}

// Refusal is why the owner's endorsement was not made, in words for the
// owner.
type Refusal string

func (r Refusal) Error() string { return string(r) }

// Endorse replaces memory/p's own label with what lower makes of it. lower
// records the endorsement (in the audit log, durably) before it returns;
// only then is the new label written. A note without a label of its own
// is refused (a Refusal), as is whatever lower refuses.
func (s *Store) Endorse(p string, lower func(before wire.NoteLabel) (wire.NoteLabel, error)) (before, after wire.NoteLabel, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labels[p]
	if !ok {
		reason := p + " has no label to lower: no tool call wrote it, so it is read with the labels of the grant that reads it"
		if f, ok := s.labelFor(p); ok {
			reason = fmt.Sprintf("%s has no label of its own; it is read with the label of the folder %s, which you can endorse", p, f.Path)
		}
		return wire.NoteLabel{}, wire.NoteLabel{}, Refusal(reason)
	}
	before = l.Label
	if after, err = lower(before); err != nil {
		return before, after, err
	}
	endorsed := *l
	endorsed.Label = after
	return before, after, s.commit(labelChanges{put: []*storedLabel{&endorsed}})
}

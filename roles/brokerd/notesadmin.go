package brokerd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"boxmaker/policy"
	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// The owner's note commands on the admin socket (DESIGN.md section 12):
// list the files under memory/ with their labels, show one, and endorse
// one (lower its label), which is audited with the owner as approver.

const (
	// showMax bounds a note's content in notes_show_result: with every
	// byte escaped (\u00xx, six bytes), it still fits one frame.
	showMax = 128 << 10
	// listFrameBudget is about how many bytes of entries one notes_list
	// frame carries.
	listFrameBudget = 256 << 10
	// endorseTool is the tool an endorsement's audit record names: the
	// audit record has no kind of its own for it, so it is recorded as an
	// owner's approval of this pseudo-tool with no grant, on the session and
	// call that wrote the label.
	endorseTool = "notes_endorse"
)

// notesList answers notes_list in frames that fit: every regular file under
// memory/ with its label (nil: the owner's), and every folder label.
func (b *broker) notesList(reply replyFunc) error {
	entries, err := b.runner.notes.list()
	if err != nil {
		return reply(true, wire.NotesRefused{Path: ".", Reason: err.Error()})
	}
	part, size := []wire.NoteEntry{}, 0
	for _, e := range entries {
		n := 6*len(e.Path) + 512
		if size+n > listFrameBudget && len(part) > 0 {
			if err := reply(false, wire.NotesListPart{Notes: part}); err != nil {
				return err
			}
			part, size = []wire.NoteEntry{}, 0
		}
		part, size = append(part, e), size+n
	}
	return reply(true, wire.NotesListResult{Notes: part})
}

// list walks all of memory/ (within the walk limits) and joins the labels.
func (s *noteLabels) list() ([]wire.NoteEntry, error) {
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

// notesShow answers notes_show: the content (cut at showMax) and the label
// it is read with.
func (b *broker) notesShow(q wire.NotesShow) wire.Message {
	p, err := policy.CleanPath(wire.MemoryPathsDimension, q.Path)
	if err != nil {
		return wire.NotesRefused{Path: q.Path, Reason: err.Error()}
	}
	s := b.runner.notes
	content, truncated, err := s.readNote(p)
	if err != nil {
		return wire.NotesRefused{Path: p, Reason: err.Error()}
	}
	res := wire.NotesShowResult{Path: p, Content: content, Truncated: truncated}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.labelFor(p); ok {
		lab := l.Label
		res.Label, res.LabelPath = &lab, l.Path
	}
	return res
}

// readNote reads memory/p as a sandbox would not be allowed to mislead
// brokerd into: beneath memory/, through no symlink, a regular file.
func (s *noteLabels) readNote(p string) (string, bool, error) {
	memfd, err := s.openMemory()
	if err != nil {
		return "", false, err
	}
	defer unix.Close(memfd)
	fd, err := openBeneath(memfd, p, unix.O_RDONLY|unix.O_NONBLOCK)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return "", false, fmt.Errorf("%s: a symlink is in the way, and brokerd never follows one under memory/", p)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return "", false, fmt.Errorf("%s: no such file in memory/", p)
	case err != nil:
		return "", false, fmt.Errorf("%s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, showMax+1))
	if err != nil {
		return "", false, err
	}
	content, truncated := truncate(string(data), showMax)
	return content, truncated || len(data) > showMax, nil
}

// notesEndorse answers notes_endorse: the owner lowers a label. Each of
// class and trusted changes only its own half, and neither may raise it.
// The endorsement is in the audit log, durably, before the lower label is
// written.
func (b *broker) notesEndorse(q wire.NotesEndorse, approver string) (wire.Message, error) {
	p, err := policy.CleanPath(wire.MemoryPathsDimension, q.Path)
	if err != nil {
		return wire.NotesRefused{Path: q.Path, Reason: err.Error()}, nil
	}
	if q.Class == nil && !q.Trusted {
		return wire.NotesRefused{Path: p, Reason: "nothing to endorse: give a class, trusted, or both"}, nil
	}
	s := b.runner.notes
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labels[p]
	if !ok {
		reason := p + " has no label to lower: no tool call wrote it, so it is read with the labels of the grant that reads it"
		if f, ok := s.labelFor(p); ok {
			reason = fmt.Sprintf("%s has no label of its own; it is read with the label of the folder %s, which you can endorse", p, f.Path)
		}
		return wire.NotesRefused{Path: p, Reason: reason}, nil
	}
	before, after := l.Label, l.Label
	if q.Class != nil {
		if *q.Class > before.Class {
			return wire.NotesRefused{Path: p, Reason: fmt.Sprintf("endorse only lowers a label: %s is %s, and %s is higher", p, before.Class, *q.Class)}, nil
		}
		after.Class = *q.Class
	}
	if q.Trusted {
		after.Untrusted = false
	}
	now, err := wire.TimestampOf(b.clock())
	if err != nil {
		return nil, err
	}
	after.Endorsed = &wire.Endorsement{By: approver, Time: now}
	q.Path = p
	args, err := wire.Marshal(&q) // canonical: {"path":...,"class":...,"trusted":...}
	if err != nil {
		return nil, err
	}
	_, err = b.audit.Append(wire.AuditRecord{
		Session: before.Session, Call: before.Call, Tool: endorseTool, Arguments: string(args),
		SessionTaint: before.Class, Decision: wire.DecisionApproved{Grant: "", Approver: approver},
	})
	if err != nil {
		b.fatal(fmt.Errorf("audit log: %w", err))
		return nil, err
	}
	endorsed := *l
	endorsed.Label = after
	if err := s.commit(labelChanges{put: []*storedLabel{&endorsed}}); err != nil {
		return nil, err
	}
	b.log.Printf("note %s: endorsed by %s: %s%s -> %s%s", p, approver, before.Class, untrustedWord(before.Untrusted), after.Class, untrustedWord(after.Untrusted))
	return wire.NotesEndorseResult{Path: p, Before: before, After: after}, nil
}

func untrustedWord(u bool) string {
	if u {
		return " untrusted"
	}
	return ""
}

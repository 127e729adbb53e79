package brokerd

import (
	"errors"
	"fmt"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/wire"
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
	entries, err := b.runner.notes.List()
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

// notesShow answers notes_show: the content (cut at showMax) and the label
// it is read with.
func (b *broker) notesShow(q wire.NotesShow) wire.Message {
	p, err := policy.CleanPath(wire.MemoryPathsDimension, q.Path)
	if err != nil {
		return wire.NotesRefused{Path: q.Path, Reason: err.Error()}
	}
	data, err := b.runner.notes.ReadNote(p, showMax)
	if err != nil {
		return wire.NotesRefused{Path: p, Reason: err.Error()}
	}
	content, truncated := truncate(string(data), showMax)
	res := wire.NotesShowResult{Path: p, Content: content, Truncated: truncated || len(data) > showMax}
	if l, at, ok := b.runner.notes.LabelOf(p); ok {
		res.Label, res.LabelPath = &l, at
	}
	return res
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
	before, after, err := b.runner.notes.Endorse(p, func(before wire.NoteLabel) (wire.NoteLabel, error) {
		return b.endorsed(q, p, before, approver)
	})
	var refused notes.Refusal
	if errors.As(err, &refused) {
		return wire.NotesRefused{Path: p, Reason: refused.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	b.log.Printf("note %s: endorsed by %s: %s%s -> %s%s", p, approver, before.Class, untrustedWord(before.Untrusted), after.Class, untrustedWord(after.Untrusted))
	return wire.NotesEndorseResult{Path: p, Before: before, After: after}, nil
}

// endorsed is the label the owner's endorsement q makes of before, once
// the endorsement is in the audit log, durably; neither half may rise.
func (b *broker) endorsed(q wire.NotesEndorse, p string, before wire.NoteLabel, approver string) (wire.NoteLabel, error) {
	after := before
	if q.Class != nil {
		if *q.Class > before.Class {
			return before, notes.Refusal(fmt.Sprintf("endorse only lowers a label: %s is %s, and %s is higher", p, before.Class, *q.Class))
		}
		after.Class = *q.Class
	}
	if q.Trusted {
		after.Untrusted = false
	}
	now, err := wire.TimestampOf(b.clock())
	if err != nil {
		return before, err
	}
	after.Endorsed = &wire.Endorsement{By: approver, Time: now}
	q.Path = p
	args, err := wire.Marshal(&q) // canonical: {"path":...,"class":...,"trusted":...}
	if err != nil {
		return before, err
	}
	_, err = b.audit.Append(wire.AuditRecord{
		Session: before.Session, Call: before.Call, Tool: endorseTool, Arguments: string(args),
		SessionTaint: before.Class, Decision: wire.DecisionApproved{Grant: "", Approver: approver},
	})
	if err != nil {
		b.fatal(fmt.Errorf("audit log: %w", err))
		return before, err
	}
	return after, nil
}

func untrustedWord(u bool) string {
	if u {
		return " untrusted"
	}
	return ""
}

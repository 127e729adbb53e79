package bxctl

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// notesCommand is `boxmaker notes [list | show PATH | endorse PATH [--class
// CLASS] [--trusted]]`: the labels brokerd keeps on the files under memory/
// (DESIGN.md section 12), through the admin socket.
func notesCommand() *cli.Command {
	return &cli.Command{
		Name:   "notes",
		Usage:  "list the files under memory/ with the labels brokerd keeps (who wrote each, at what taint)",
		Flags:  withJSON(notesShape),
		Action: listNotes,
		Commands: []*cli.Command{{
			Name:   "list",
			Usage:  "list the files under memory/ with their labels (the default)",
			Flags:  withJSON(notesShape),
			Action: listNotes,
		}, {
			Name:      "show",
			Usage:     "print a note (sanitized for the terminal) and, on stderr, its label",
			ArgsUsage: "PATH",
			Flags:     homeFlags(),
			Action:    showNote,
		}, {
			Name:      "endorse",
			Usage:     "lower a note's label: each flag changes only its own half (audited, with you as approver)",
			ArgsUsage: "PATH",
			Flags: append(homeFlags(),
				&cli.StringFlag{Name: "class", Usage: "the class it becomes: public, private or secret (never higher than it is)"},
				&cli.BoolFlag{Name: "trusted", Usage: "clear its untrusted flag"}),
			Action: endorseNote,
		}},
	}
}

func listNotes(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("notes: no command named %q; valid: list, show, endorse", cmd.Args().First())
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	var notes []wire.NoteEntry
	res, err := callAdminPartial(ctx, paths, wire.NotesList{}, func(m wire.Message) error {
		part, ok := m.(wire.NotesListPart)
		if !ok {
			return fmt.Errorf("brokerd sent %s in a notes list", wire.KindOf(m))
		}
		notes = append(notes, part.Notes...)
		return nil
	})
	if err != nil {
		return err
	}
	switch r := res.(type) {
	case wire.NotesListResult:
		notes = append(notes, r.Notes...)
	case wire.NotesRefused:
		return fmt.Errorf("notes: %s", termtext.Line(r.Reason))
	default:
		return fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	}
	if cmd.Bool("json") {
		return printJSON(cmd.Root().Writer, nonNil(notes))
	}
	writeNotes(cmd.Root().Writer, notes)
	return nil
}

// writeNotes prints one line per entry: the path (sanitized: a sandbox
// names the files it writes), then the label or "owner".
func writeNotes(out io.Writer, notes []wire.NoteEntry) {
	if len(notes) == 0 {
		fmt.Fprintln(out, "no files under memory/")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tCLASS\tTRUST\tWRITER\tTIME")
	for _, n := range notes {
		p := termtext.Line(n.Path)
		if n.Folder {
			p += "/ (folder)"
		}
		if n.Label == nil {
			fmt.Fprintf(tw, "%s\towner\t\t\t\n", p)
			continue
		}
		l := n.Label
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p, l.Class, trustWord(*l), writerOf(*l), l.Time)
	}
	tw.Flush()
}

func trustWord(l wire.NoteLabel) string {
	word := "trusted"
	if l.Untrusted {
		word = "untrusted"
	}
	if l.Endorsed != nil {
		word += " (endorsed)"
	}
	return word
}

func writerOf(l wire.NoteLabel) string {
	return fmt.Sprintf("session %s call %d", l.Session, l.Call)
}

func showNote(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("notes show takes one PATH, relative to memory/")
	}
	res, err := callBroker(ctx, cmd, wire.NotesShow{Path: cmd.Args().First()})
	if err != nil {
		return err
	}
	switch r := res.(type) {
	case wire.NotesShowResult:
		writeLabel(cmd.Root().ErrWriter, r)
		fmt.Fprint(cmd.Root().Writer, termtext.Clean(r.Content))
		if r.Content != "" && r.Content[len(r.Content)-1] != '\n' {
			fmt.Fprintln(cmd.Root().Writer)
		}
		return nil
	case wire.NotesRefused:
		return fmt.Errorf("notes show: %s", termtext.Line(r.Reason))
	default:
		return fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	}
}

// writeLabel describes the label a note is read with, for stderr.
func writeLabel(w io.Writer, r wire.NotesShowResult) {
	p := termtext.Line(r.Path)
	if r.Label == nil {
		fmt.Fprintf(w, "%s: no label (the owner's): read with the labels of the grant that reads it\n", p)
	} else {
		l := *r.Label
		from := ""
		if r.LabelPath != r.Path {
			from = " (the label of the folder " + termtext.Line(r.LabelPath) + ")"
		}
		fmt.Fprintf(w, "%s: %s, %s, written by %s at %s%s\n", p, l.Class, trustWord(l), writerOf(l), l.Time, from)
		if l.Endorsed != nil {
			fmt.Fprintf(w, "%s: endorsed by %s at %s\n", p, termtext.Line(l.Endorsed.By), l.Endorsed.Time)
		}
		if l.SHA256 != nil && !r.Truncated && sha256.Sum256([]byte(r.Content)) != *l.SHA256 {
			fmt.Fprintf(w, "%s: changed since it was labelled (it keeps its label)\n", p)
		}
	}
	if r.Truncated {
		fmt.Fprintf(w, "%s: only the beginning is shown\n", p)
	}
}

func endorseNote(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("notes endorse takes one PATH, relative to memory/")
	}
	q := wire.NotesEndorse{Path: cmd.Args().First(), Trusted: cmd.Bool("trusted")}
	if cmd.IsSet("class") {
		c, err := wire.ParseDataClass(cmd.String("class"))
		if err != nil {
			return usagef("notes endorse: --class: %v", err)
		}
		q.Class = &c
	}
	if q.Class == nil && !q.Trusted {
		return usagef("notes endorse: say what to lower: --class CLASS, --trusted, or both")
	}
	res, err := callBroker(ctx, cmd, q)
	if err != nil {
		return err
	}
	switch r := res.(type) {
	case wire.NotesEndorseResult:
		fmt.Fprintf(cmd.Root().Writer, "endorsed %s: %s, %s -> %s, %s\n", termtext.Line(r.Path),
			r.Before.Class, trustWord(r.Before), r.After.Class, trustWord(r.After))
		return nil
	case wire.NotesRefused:
		return fmt.Errorf("notes endorse: %s", termtext.Line(r.Reason))
	default:
		return fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	}
}

// callAdminPartial sends one message on the owner's socket and hands each
// partial frame of the answer to onPartial.
func callAdminPartial(ctx context.Context, paths config.Paths, m wire.Message, onPartial func(wire.Message) error) (wire.Message, error) {
	path, err := sock.PathOf(paths, "bxctl", "brokerd")
	if err != nil {
		return nil, err
	}
	c, err := sock.Dial(path)
	if err != nil {
		return nil, fmt.Errorf("brokerd is not answering at %s (is boxmaker up?): %w", path, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return c.Call(ctx, m, onPartial)
}

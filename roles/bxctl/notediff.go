package bxctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"
)

// maxDiffLines bounds each side of a shown diff: the table below is their
// product, and a note longer than this is summarised, not diffed.
const maxDiffLines = 400

// diffContext is how many unchanged lines stand around a change.
const diffContext = 2

// notesWritePreview says whether a notes_write approval creates the note
// or replaces it and, when it replaces, how it changes. The note's text
// comes from brokerd (notes show), never read by bxctl from memory/,
// which a role writes; all of it goes through the sanitizer.
func (c *chatter) notesWritePreview(ctx context.Context, a wire.Approval) string {
	if a.Tool != "notes_write" {
		return ""
	}
	tool, _ := wire.ToolByName(a.Tool)
	args, err := tool.DecodeArgs(a.Arguments)
	w, ok := args.(wire.NotesWriteArgs)
	if err != nil || !ok {
		return ""
	}
	path, err := policy.CleanPath(wire.MemoryPathsDimension, w.Path)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := callAdmin(ctx, c.paths, wire.NotesShow{Path: path})
	switch r := res.(type) {
	case wire.NotesShowResult:
		if r.Truncated {
			return fmt.Sprintf("  replaces memory/%s (too large to diff here; see boxmaker notes show %s)\n", termtext.Line(path), termtext.Line(path))
		}
		return fmt.Sprintf("  replaces memory/%s:\n%s", termtext.Line(path), lineDiff(r.Content, w.Content))
	case wire.NotesRefused:
		return fmt.Sprintf("  creates memory/%s (%d bytes): no note is there now\n", termtext.Line(path), len(w.Content))
	}
	if err != nil {
		return fmt.Sprintf("  memory/%s: brokerd does not say whether it exists: %v\n", termtext.Line(path), err)
	}
	return ""
}

// lineDiff shows how old becomes new, line by line: "- " removed, "+ "
// added, "  " unchanged around a change.
func lineDiff(old, new string) string {
	a, b := splitLines(old), splitLines(new)
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		return fmt.Sprintf("    (%d lines become %d lines: too many to diff here)\n", len(a), len(b))
	}
	if old == new {
		return "    (no change)\n"
	}
	ops := diffOps(a, b)
	var out strings.Builder
	for i, op := range ops {
		if op.kind == ' ' && !nearChange(ops, i) {
			if i > 0 && nearChange(ops, i-1) {
				out.WriteString("    …\n")
			}
			continue
		}
		out.WriteString("    " + string(op.kind) + " " + termtext.Line(op.line) + "\n")
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

// diffOps is the longest-common-subsequence edit of a into b.
func diffOps(a, b []string) []diffOp {
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	return ops
}

// nearChange reports whether ops[i] is within diffContext of a change.
func nearChange(ops []diffOp, i int) bool {
	for k := max(0, i-diffContext); k <= min(len(ops)-1, i+diffContext); k++ {
		if ops[k].kind != ' ' {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

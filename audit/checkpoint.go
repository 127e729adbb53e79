package audit

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// A checkpoint is a signed statement of the log's Merkle tree (tree.go): "the
// log of this origin held seq records, and the RFC 6962 tree over them has
// this root". It is a C2SP tlog-checkpoint in a C2SP signed note, signed
// with a key named like the origin, and no extension lines:
//
//	host-1a2b3c4d/boxmaker-audit     origin (LoadOrigin)
//	1000                             tree size: the seq of the head
//	<base64 of the tree's root>      root hash
//
// so that any tool of the transparency ecosystem reads it, and a witness
// can check that a newer one extends it by a consistency proof. What the
// earlier form carried in extension lines (the time it was signed, the
// head's chain hash and where it ends in the log) goes beside the note in
// checkpoints.jsonl (checkpointfile.go), unsigned: a reader checks the line
// ending there against the signed root before relying on it.
//
// Checkpoints signed before the tree existed (Legacy) have five lines:
// origin, seq, the head's chain hash, "time …" and "end …". They stay in
// checkpoints.jsonl and verify as they did, by the chain hash.

// MaxCheckpointNote bounds a signed checkpoint note, and MaxCheckpointLine
// one line of a checkpoints.jsonl, newline included, in bytes. A checkpoint
// is a few hundred bytes; the bounds leave room for a long origin and for
// more signatures. Every reader enforces them before it parses anything, so
// that the signer (brokerd, which may be compromised) cannot pad one
// checkpoint past what NewestCheckpoint reads of a file's end and so hide
// the newest checkpoint from it (issue 23, finding 6).
const (
	MaxCheckpointNote = 4 << 10
	MaxCheckpointLine = 8 << 10
)

// checkNoteSize and checkLineSize refuse a note or a line over its bound.
func checkNoteSize(n int) error {
	if n > MaxCheckpointNote {
		return fmt.Errorf("a checkpoint note of %d bytes is over the %d a checkpoint may take", n, MaxCheckpointNote)
	}
	return nil
}

func checkLineSize(n int) error {
	if n > MaxCheckpointLine {
		return fmt.Errorf("a line of %d bytes is over the %d a checkpoint may take", n, MaxCheckpointLine)
	}
	return nil
}

// OriginSuffix ends every origin: the log's name, then this.
const OriginSuffix = "/boxmaker-audit"

// Checkpoint is one signed checkpoint, with what checkpoints.jsonl keeps
// beside it.
type Checkpoint struct {
	Origin string
	Seq    uint64      // the tree's size, which is the head's seq
	Root   wire.Hash32 // the tree's root; zero in a Legacy checkpoint
	Hash   wire.Hash32 // the head's chain hash; zero when unknown (the witness's copy)
	Time   wire.Timestamp
	End    Position // where the head ends in the log; zero when unknown
	Legacy bool     // signed before the tree: Hash is signed, Root absent
	// Witnessed marks a checkpoint read from the witness's copy
	// (ReadWitness), so that a mismatch says whose it was.
	Witnessed bool
	// Cosigned is when the witness cosigned it, when the note carries a
	// cosignature that was checked; zero otherwise.
	Cosigned time.Time
	note     string // the signed note it was read from, if it was read
}

// Note is the signed note c was read from (ReadCheckpoints, OpenCheckpoint),
// or "" for a checkpoint made here and not yet signed.
func (c Checkpoint) Note() string { return c.note }

// Position is where a record ends in the log: its day file, the offset just
// after its newline, and its 1-based line number in that file.
type Position struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Line   int    `json:"line"`
}

// name is how errors refer to c: whose checkpoint, of which seq.
func (c Checkpoint) name() string {
	switch {
	case c.Witnessed:
		return fmt.Sprintf("the witness's checkpoint of seq %d", c.Seq)
	case c.Time != 0:
		return "the checkpoint of " + c.Time.String()
	}
	return fmt.Sprintf("the checkpoint of seq %d", c.Seq)
}

// ID is what identifies the log's state in c: the root, or for a Legacy
// checkpoint the chain hash.
func (c Checkpoint) ID() wire.Hash32 {
	if c.Legacy {
		return c.Hash
	}
	return c.Root
}

func (c Checkpoint) String() string {
	if c.Legacy {
		return fmt.Sprintf("seq %d chain hash %s at %s (%s)", c.Seq, c.Hash, c.Time, c.End.File)
	}
	return fmt.Sprintf("size %d root %s at %s", c.Seq, base64.StdEncoding.EncodeToString(c.Root[:]), c.Time)
}

// body is the checkpoint's note text.
func (c Checkpoint) body() (string, error) {
	if c.Origin == "" || strings.ContainsAny(c.Origin, " \n") {
		return "", fmt.Errorf("checkpoint origin %q must be one non-empty line without spaces", c.Origin)
	}
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Seq, base64.StdEncoding.EncodeToString(c.Root[:])), nil
}

// signNote returns c as a note signed by signer.
func signNote(c Checkpoint, signer note.Signer) ([]byte, error) {
	text, err := c.body()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	msg, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		return nil, fmt.Errorf("audit: sign checkpoint: %w", err)
	}
	return msg, nil
}

// OpenCheckpoint checks one signed note with the verifiers, which must know
// at least one of its signatures and find every signature they know good
// (unknown ones are ignored, as C2SP asks), and reads its body; a note
// over MaxCheckpointNote is refused unread.
func OpenCheckpoint(msg []byte, v note.Verifiers) (Checkpoint, error) {
	if err := checkNoteSize(len(msg)); err != nil {
		return Checkpoint{}, err
	}
	n, err := note.Open(msg, v)
	if err != nil {
		return Checkpoint{}, err
	}
	c, err := parseCheckpointText(n.Text)
	c.note = string(msg)
	for _, s := range n.Sigs {
		if t, err := CosignTime(s.Base64); err == nil {
			c.Cosigned = t
		}
	}
	return c, err
}

// parseCheckpointText reads a checkpoint body strictly: three lines, or a
// Legacy checkpoint's five.
func parseCheckpointText(text string) (Checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var c Checkpoint
	if len(lines) != 3 && len(lines) != 5 || lines[0] == "" {
		return c, errors.New("a checkpoint has three lines: origin, tree size, root hash")
	}
	c.Origin = lines[0]
	seq, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != lines[1] {
		return c, fmt.Errorf("checkpoint size %q is not a decimal number", lines[1])
	}
	c.Seq = seq
	h, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(h) != len(c.Root) {
		return c, fmt.Errorf("checkpoint hash %q is not 32 bytes of base64", lines[2])
	}
	if len(lines) == 3 {
		copy(c.Root[:], h)
		return c, nil
	}
	copy(c.Hash[:], h)
	c.Legacy = true
	return c, parseLegacyLines(&c, lines[3], lines[4])
}

// parseLegacyLines reads a Legacy checkpoint's time and end lines.
func parseLegacyLines(c *Checkpoint, timeLine, endLine string) error {
	ts, ok := strings.CutPrefix(timeLine, "time ")
	if !ok || c.Time.UnmarshalText([]byte(ts)) != nil {
		return fmt.Errorf("checkpoint line %q is not a time", timeLine)
	}
	_, err := fmt.Sscanf(endLine, "end %s %d %d", &c.End.File, &c.End.Offset, &c.End.Line)
	if err == nil && fmt.Sprintf("end %s %d %d", c.End.File, c.End.Offset, c.End.Line) != endLine {
		err = errors.New("not in its one form") // Sscanf stops at the last number: no padding after it
	}
	if err != nil {
		return fmt.Errorf("checkpoint line %q is not an end position: %v", endLine, err)
	}
	if _, ok := parseDayName(c.End.File); !ok && c.Seq > 0 {
		return fmt.Errorf("checkpoint names %q, not a day file", c.End.File)
	}
	return nil
}

// extends reports why next cannot follow prev, or nil when it can: a later
// checkpoint never has a lower seq, nor the same seq with another root (or,
// between Legacy ones, chain hash). The consistency of two trees of
// different sizes is a proof's to show (VerifyAgainst, witnessd).
func extends(prev, next Checkpoint) error {
	switch {
	case next.Seq < prev.Seq:
		return fmt.Errorf("checkpoint seq %d after seq %d: the checkpoints go backwards", next.Seq, prev.Seq)
	case next.Seq != prev.Seq:
		return nil
	case !next.Legacy && !prev.Legacy && next.Root != prev.Root:
		return fmt.Errorf("two checkpoints of size %d with different roots", next.Seq)
	case next.Hash != prev.Hash && next.Hash != (wire.Hash32{}) && prev.Hash != (wire.Hash32{}):
		return fmt.Errorf("two checkpoints of seq %d with different hashes (%s, %s)", next.Seq, prev.Hash, next.Hash)
	}
	return nil
}

package audit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// A checkpoint is a signed statement of the chain's head: "the log of this
// origin held seq records, the last hashing to hash, at this time". It is a
// C2SP tlog-checkpoint body in a C2SP signed note, so that other tools (and
// a witness) can check the key and signature without our code:
//
//	boxmaker audit /var/lib/boxmaker        origin
//	1000                                    size: the seq of the head
//	<base64 of the head's SHA-256>          the head's hash
//	time 2026-12-01T10:00:00.000Z           extension: when it was signed
//	end 2026-12-01.jsonl 523456 1000        extension: the head's file, the
//	                                        offset just after its newline, and
//	                                        its line number there
//
// The end line lets a reader start checking the chain at the checkpoint
// instead of at the first record. It is signed like the rest, and a reader
// still checks that the line ending there has the checkpoint's seq and hash.

// CheckpointsName is the file in the audit directory that holds the signed
// checkpoints, one per line, each note's text as a JSON string.
const CheckpointsName = "checkpoints.jsonl"

// VerifierKeyName is the file in the audit directory that holds the
// checkpoint key's verifier key (note.NewVerifier's form), written by brokerd
// so that `boxmaker audit verify` can check signatures without reading
// brokerd's own directory.
const VerifierKeyName = "checkpoint.pub"

// OriginOf is the origin line of the checkpoints of the log under home, the
// same for brokerd, which signs them, and the witness, which checks them.
func OriginOf(home string) string { return "boxmaker audit " + home }

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

// Checkpoint is one signed head of the chain.
type Checkpoint struct {
	Origin string
	Seq    uint64
	Hash   wire.Hash32
	Time   wire.Timestamp
	End    Position
	// Witnessed marks a checkpoint read from the witness's copy
	// (ReadWitness), so that a mismatch says whose it was.
	Witnessed bool
	note      string // the signed note it was read from, if it was read
}

// Note is the signed note c was read from (ReadCheckpoints, OpenCheckpoint),
// or "" for a checkpoint made here and not yet signed.
func (c Checkpoint) Note() string { return c.note }

// Position is where a record ends in the log: its day file, the offset just
// after its newline, and its 1-based line number in that file.
type Position struct {
	File   string
	Offset int64
	Line   int
}

// name is how errors refer to c: whose checkpoint, signed when.
func (c Checkpoint) name() string {
	if c.Witnessed {
		return "the witness's checkpoint of " + c.Time.String()
	}
	return "the checkpoint of " + c.Time.String()
}

func (c Checkpoint) String() string {
	return fmt.Sprintf("seq %d %s at %s (%s)", c.Seq, c.Hash, c.Time, c.End.File)
}

// text is the checkpoint's note body.
func (c Checkpoint) text() (string, error) {
	ts, err := c.Time.MarshalText()
	if err != nil {
		return "", err
	}
	if c.Origin == "" || strings.ContainsAny(c.Origin, "\n") {
		return "", fmt.Errorf("checkpoint origin %q must be one non-empty line", c.Origin)
	}
	return fmt.Sprintf("%s\n%d\n%s\ntime %s\nend %s %d %d\n", c.Origin, c.Seq,
		base64.StdEncoding.EncodeToString(c.Hash[:]), ts, c.End.File, c.End.Offset, c.End.Line), nil
}

// SignCheckpoint returns c as a signed note, encoded as the JSON string line
// (newline included) that checkpoints.jsonl holds.
func SignCheckpoint(c Checkpoint, signer note.Signer) ([]byte, error) {
	msg, err := signNote(c, signer)
	if err != nil {
		return nil, err
	}
	return CheckpointLine(string(msg))
}

// signNote returns c as a signed note.
func signNote(c Checkpoint, signer note.Signer) ([]byte, error) {
	text, err := c.text()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	msg, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		return nil, fmt.Errorf("audit: sign checkpoint: %w", err)
	}
	return msg, nil
}

// OpenCheckpoint checks one signed note with the verifier and reads its
// body; a note over MaxCheckpointNote is refused unread.
func OpenCheckpoint(msg []byte, v note.Verifier) (Checkpoint, error) {
	if err := checkNoteSize(len(msg)); err != nil {
		return Checkpoint{}, err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, err
	}
	c, err := parseCheckpointText(n.Text)
	c.note = string(msg)
	return c, err
}

// parseCheckpointText reads a body written by text, strictly.
func parseCheckpointText(text string) (Checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var c Checkpoint
	if len(lines) != 5 || lines[0] == "" {
		return c, errors.New("a checkpoint has five lines: origin, seq, hash, time, end")
	}
	c.Origin = lines[0]
	seq, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != lines[1] {
		return c, fmt.Errorf("checkpoint size %q is not a decimal seq", lines[1])
	}
	c.Seq = seq
	h, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(h) != len(c.Hash) {
		return c, fmt.Errorf("checkpoint hash %q is not 32 bytes of base64", lines[2])
	}
	copy(c.Hash[:], h)
	ts, ok := strings.CutPrefix(lines[3], "time ")
	if !ok || c.Time.UnmarshalText([]byte(ts)) != nil {
		return c, fmt.Errorf("checkpoint line %q is not a time", lines[3])
	}
	_, err = fmt.Sscanf(lines[4], "end %s %d %d", &c.End.File, &c.End.Offset, &c.End.Line)
	if err == nil && fmt.Sprintf("end %s %d %d", c.End.File, c.End.Offset, c.End.Line) != lines[4] {
		err = errors.New("not in its one form") // Sscanf stops at the last number: no padding after it
	}
	if err != nil {
		return c, fmt.Errorf("checkpoint line %q is not an end position: %v", lines[4], err)
	}
	if _, ok := parseDayName(c.End.File); !ok && c.Seq > 0 {
		return c, fmt.Errorf("checkpoint names %q, not a day file", c.End.File)
	}
	return c, nil
}

// ReadCheckpoints returns the checkpoints in dir's checkpoints.jsonl, oldest
// first, each checked with v; none when the file does not exist. A last line
// without its newline is a checkpoint whose write was cut short and is left
// out, and so is a line that is not a JSON string: such a line is a write cut
// short, which the next writer ended with a newline. Neither was relied on,
// since a checkpoint counts only once fsynced, and skipping one loses no
// protection: it signs nothing. Every other line must be a correctly signed checkpoint, and
// seqs never fall; the same seq twice must carry the same hash.
func ReadCheckpoints(dir string, v note.Verifier) ([]Checkpoint, error) {
	data, err := readRegular(filepath.Join(dir, CheckpointsName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return parseCheckpoints(data, v)
}

// parseCheckpoints reads the lines of a checkpoints.jsonl, as ReadCheckpoints.
func parseCheckpoints(data []byte, v note.Verifier) ([]Checkpoint, error) {
	end := bytes.LastIndexByte(data, '\n') + 1
	if err := checkLineSize(len(data) - end); err != nil { // a torn last line is the start of one
		return nil, fmt.Errorf("audit: %s, its last line: %w", CheckpointsName, err)
	}
	data = data[:end] // without a torn last line
	var cps []Checkpoint
	n := 0
	for line := range bytes.Lines(data) {
		n++
		if err := checkLineSize(len(line)); err != nil {
			return nil, fmt.Errorf("audit: %s line %d: %w", CheckpointsName, n, err)
		}
		var msg string
		if json.Unmarshal(line, &msg) != nil {
			continue // a write cut short, ended with a newline by the next writer
		}
		c, err := OpenCheckpoint([]byte(msg), v)
		if err == nil && len(cps) > 0 {
			err = extends(cps[len(cps)-1], c)
		}
		if err != nil {
			return nil, fmt.Errorf("audit: %s line %d: %w", CheckpointsName, n, err)
		}
		cps = append(cps, c)
	}
	return cps, nil
}

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

// extends reports why next cannot follow prev, or nil when it can: a later
// checkpoint never has a lower seq, nor the same seq with another hash.
func extends(prev, next Checkpoint) error {
	switch {
	case next.Seq < prev.Seq:
		return fmt.Errorf("checkpoint seq %d after seq %d: the checkpoints go backwards", next.Seq, prev.Seq)
	case next.Seq == prev.Seq && next.Hash != prev.Hash:
		return fmt.Errorf("two checkpoints of seq %d with different hashes (%s, %s)", next.Seq, prev.Hash, next.Hash)
	}
	return nil
}

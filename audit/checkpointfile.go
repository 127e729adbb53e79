package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// CheckpointsName is the file in the audit directory that holds the signed
// checkpoints, one per line: a JSON object with the note and what goes
// beside it (sideLine), or, for a Legacy checkpoint and in the witness's
// copy, the note's text alone as a JSON string.
const CheckpointsName = "checkpoints.jsonl"

// VerifierKeyName is the file in the audit directory that holds the
// checkpoint key's verifier key (note.NewVerifier's form), written by brokerd
// so that `boxmaker audit verify` can check signatures without reading
// brokerd's own directory; after a migration the key of the Legacy
// checkpoints follows on a second line.
const VerifierKeyName = "checkpoint.pub"

// sideLine is one line of brokerd's checkpoints.jsonl.
type sideLine struct {
	Note string         `json:"note"`
	Hash wire.Hash32    `json:"hash"` // the head's chain hash
	Time wire.Timestamp `json:"time"` // when it was signed
	End  Position       `json:"end"`  // where the head ends in the log
}

// SignCheckpoint returns c as a signed note and as the line (newline
// included) that checkpoints.jsonl holds.
func SignCheckpoint(c Checkpoint, signer note.Signer) (msg, line []byte, err error) {
	if msg, err = signNote(c, signer); err != nil {
		return nil, nil, err
	}
	line, err = json.Marshal(sideLine{Note: string(msg), Hash: c.Hash, Time: c.Time, End: c.End})
	if err == nil {
		err = errors.Join(checkNoteSize(len(msg)), checkLineSize(len(line)+1))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	return msg, append(line, '\n'), nil
}

// CheckpointLine is note as one line of the witness's checkpoints.jsonl:
// the note's text as a JSON string, then a newline. It refuses a note over
// MaxCheckpointNote, or one whose line would be over MaxCheckpointLine,
// before reading it: no reader would take it.
func CheckpointLine(msg string) ([]byte, error) {
	if err := checkNoteSize(len(msg)); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	line, err := json.Marshal(msg)
	if err == nil {
		err = checkLineSize(len(line) + 1)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return append(line, '\n'), nil
}

// ReadCheckpoints returns the checkpoints in dir's checkpoints.jsonl, oldest
// first, each checked with v; none when the file does not exist. A last line
// without its newline is a checkpoint whose write was cut short and is left
// out, and so is a line that is neither a JSON string nor a JSON object:
// such a line is a write cut short, which the next writer ended with a
// newline. Neither was relied on, since a checkpoint counts only once
// fsynced, and skipping one loses no protection: it signs nothing. Every
// other line must be a correctly signed checkpoint, and seqs never fall;
// the same seq twice must carry the same root (or chain hash).
func ReadCheckpoints(dir string, v note.Verifiers) ([]Checkpoint, error) {
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
func parseCheckpoints(data []byte, v note.Verifiers) ([]Checkpoint, error) {
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
		c, ok, err := parseCheckpointLine(line, v)
		if !ok {
			continue // a write cut short, ended with a newline by the next writer
		}
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

// parseCheckpointLine reads one line; ok is false for a line cut short.
func parseCheckpointLine(line []byte, v note.Verifiers) (Checkpoint, bool, error) {
	var msg string
	if json.Unmarshal(line, &msg) == nil { // the witness's form, or a Legacy one
		c, err := OpenCheckpoint([]byte(msg), v)
		if c.Time == 0 && !c.Cosigned.IsZero() {
			c.Time, _ = wire.TimestampOf(c.Cosigned)
		}
		return c, true, err
	}
	var side sideLine
	if json.Unmarshal(line, &side) != nil {
		return Checkpoint{}, false, nil
	}
	c, err := OpenCheckpoint([]byte(side.Note), v)
	if err == nil && c.Legacy {
		err = errors.New("a Legacy checkpoint in a line of the tree's form")
	}
	c.Hash, c.Time, c.End = side.Hash, side.Time, side.End
	return c, true, err
}

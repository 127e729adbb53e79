package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/mod/sumdb/note"
)

// The witness's copy (DESIGN.md section 14): witnessd keeps the checkpoints
// it accepted in its own directory, in the same form as the log's
// checkpoints.jsonl (one signed note per line, as a JSON string), beside
// the verifier key it trusts in WitnessKeyName. The owner's `audit verify`
// reads them from there, so that a log rewritten together with brokerd's
// own checkpoints (brokerd holds the key) still differs from what the
// witness holds.

// WitnessKeyName is the file in the witness's directory that holds the
// verifier key the witness trusts, note.NewVerifier's form, one line.
const WitnessKeyName = "key.pub"

// CheckpointLine is note as one line of a checkpoints.jsonl: the note's
// text as a JSON string, then a newline. It refuses a note over
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

// openRegular opens a file for reading that a role could have replaced
// with a link or a FIFO: root's readers (audit verify, status) never follow
// the link nor wait on the FIFO. It refuses anything but a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// readRegular reads a whole file that openRegular opens.
func readRegular(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReadVerifierKey reads a verifier key file (one line); nil, nil when it
// does not exist.
func ReadVerifierKey(path string) (note.Verifier, error) {
	data, err := readRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	return v, nil
}

// ReadWitness returns the checkpoints in the witness's directory, oldest
// first and marked Witnessed, each checked with the key the witness
// trusts; none when the witness never took one.
func ReadWitness(dir string) ([]Checkpoint, error) {
	v, err := ReadVerifierKey(filepath.Join(dir, WitnessKeyName))
	if err != nil || v == nil {
		return nil, err
	}
	cps, err := ReadCheckpoints(dir, v)
	if err != nil {
		return nil, fmt.Errorf("the witness's copy in %s: %w", dir, err)
	}
	for i := range cps {
		cps[i].Witnessed = true
	}
	return cps, nil
}

// newestTail is how much of the end of a checkpoints.jsonl NewestCheckpoint
// reads: many checkpoints' worth, since one is a few hundred bytes, and
// always more than a torn line and a whole one, since neither may pass
// MaxCheckpointLine.
const newestTail = 64 << 10

// NewestCheckpoint returns the newest checkpoint in dir's checkpoints.jsonl,
// checked with v, reading only the end of the file; nil when it holds none.
// A line over MaxCheckpointLine at the end, even one longer than what it
// reads, is an error: it never takes an older checkpoint, or none, for the
// newest.
func NewestCheckpoint(dir string, v note.Verifier) (*Checkpoint, error) {
	f, err := openRegular(filepath.Join(dir, CheckpointsName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	from := max(st.Size()-newestTail, 0)
	data := make([]byte, st.Size()-from)
	if _, err := f.ReadAt(data, from); err != nil && err != io.EOF {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if from > 0 { // the first line read is most likely a part of one
		part := bytes.IndexByte(data, '\n')
		if part < 0 {
			part = len(data)
		}
		if part > MaxCheckpointLine {
			return nil, fmt.Errorf("audit: %s holds a line of more than %d bytes near its end, over the %d a checkpoint may take",
				CheckpointsName, part, MaxCheckpointLine)
		}
		data = data[part+1:]
	}
	cps, err := parseCheckpoints(data, v)
	if err != nil || len(cps) == 0 {
		return nil, err
	}
	return &cps[len(cps)-1], nil
}

// MergeCheckpoints is a and b in one list ordered by seq, as VerifyAgainst
// takes it; at the same seq, a's come first.
func MergeCheckpoints(a, b []Checkpoint) []Checkpoint {
	out := append(slices.Clone(a), b...)
	slices.SortStableFunc(out, func(x, y Checkpoint) int { return cmp.Compare(x.Seq, y.Seq) })
	return out
}

// CheckCheckpoint checks that the log in dir still holds cp's record where
// cp says the chain ended, without reading the rest of the log.
func CheckCheckpoint(dir string, cp Checkpoint) error {
	files, err := listDayFiles(dir)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(files, func(f dayFile) bool { return f.name == cp.End.File }) {
		return cp.mismatch("the file it ends in is gone: the log is shorter than it was")
	}
	_, err = checkpointedLine(filepath.Join(dir, cp.End.File), cp)
	return err
}

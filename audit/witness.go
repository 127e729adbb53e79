package audit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"boxmaker/wire"

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

// ReadVerifierKey reads a verifier key file, one key a line (brokerd's
// checkpoint.pub holds the key of the Legacy checkpoints on a second line
// after a migration); nil, nil when it does not exist. A line that is not
// a note key is read as a cosignature key (the witness's cosign.pub).
func ReadVerifierKey(path string) (note.Verifiers, error) {
	lines, err := readKeyLines(path)
	if err != nil || lines == nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("audit: %s holds no key", path)
	}
	v, err := ReadVerifierKeyText(lines)
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	return v, nil
}

// WitnessCosignKeyName is the file in the witness's directory that holds
// the verifier key of the witness's own cosignature key (its private half
// is in cosign.key, which only witnessd's uid reads).
const WitnessCosignKeyName = "cosign.pub"

// WitnessKeys are the keys that check the witness's copy: brokerd's keys
// that the witness trusts and its own cosignature key; nil when the
// witness trusts none yet.
func WitnessKeys(dir string) (note.Verifiers, error) {
	broker, err := readKeyLines(filepath.Join(dir, WitnessKeyName))
	if err != nil || broker == nil {
		return nil, err
	}
	cosign, err := readKeyLines(filepath.Join(dir, WitnessCosignKeyName))
	if err != nil {
		return nil, err
	}
	return ReadVerifierKeyText(append(broker, cosign...))
}

// readKeyLines is the key lines of a key file; none when it does not exist.
func readKeyLines(path string) ([]string, error) {
	data, err := readRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	lines := []string{}
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines, nil
}

// ReadVerifierKeyText reads verifier keys, note keys or cosignature keys.
func ReadVerifierKeyText(keys []string) (note.Verifiers, error) {
	var vs []note.Verifier
	for _, k := range keys {
		v, err := note.NewVerifier(k)
		if err != nil {
			var cerr error
			if v, cerr = NewCosignVerifier(k); cerr != nil {
				return nil, fmt.Errorf("audit: %q is not a verifier key: %w", k, err)
			}
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}

// ReadWitness returns the checkpoints in the witness's directory, oldest
// first and marked Witnessed, each checked with the keys the witness
// trusts; none when the witness never took one. Every checkpoint of the
// tree's form must carry the witness's own cosignature.
func ReadWitness(dir string) ([]Checkpoint, error) {
	v, err := WitnessKeys(dir)
	if err != nil || v == nil {
		return nil, err
	}
	cps, err := ReadCheckpoints(dir, v)
	if err != nil {
		return nil, fmt.Errorf("the witness's copy in %s: %w", dir, err)
	}
	for i := range cps {
		cps[i].Witnessed = true
		if !cps[i].Legacy && cps[i].Cosigned.IsZero() {
			return nil, fmt.Errorf("the witness's copy in %s: its checkpoint of size %d has no cosignature by the witness's key", dir, cps[i].Seq)
		}
		if cps[i].Time == 0 && !cps[i].Cosigned.IsZero() {
			cps[i].Time, _ = wire.TimestampOf(cps[i].Cosigned)
		}
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
func NewestCheckpoint(dir string, v note.Verifiers) (*Checkpoint, error) {
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
		data = data[min(part+1, len(data)):]
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

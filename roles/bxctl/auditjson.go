package bxctl

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"
)

// verifyJSON is `audit verify --json`'s object, printed whether the log
// verifies or not.
type verifyJSON struct {
	OK bool `json:"ok"`
	// Records is how many records the chain check read: all of them, or
	// with --from-checkpoint those after FromCheckpoint.
	Records            uint64    `json:"records"`
	Files              int       `json:"files"`
	Torn               int       `json:"torn"`
	Head               *headJSON `json:"head"`            // null when the chain did not verify
	FromCheckpoint     *uint64   `json:"from_checkpoint"` // null: the whole chain was checked
	Checkpoints        int       `json:"checkpoints"`     // brokerd's
	WitnessCheckpoints int       `json:"witness_checkpoints"`
	Error              string    `json:"error,omitempty"`
	BadFile            string    `json:"bad_file,omitempty"` // of a bad record: its day file
	BadLine            int       `json:"bad_line,omitempty"` // and line
}

type headJSON struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

func (v *verifyJSON) setResult(res audit.Result, from *uint64) {
	v.Records, v.Files, v.Torn = res.Records, res.Files, res.Torn
	v.Head = &headJSON{Seq: res.Head.Seq, Hash: res.Head.Hash.String()}
	if from != nil {
		v.FromCheckpoint = from
		v.Records = res.Head.Seq - min(*from, res.Head.Seq)
	}
}

// printVerifyJSON prints rep with how the check ended, and returns err for
// the exit status and stderr.
func printVerifyJSON(out io.Writer, rep verifyJSON, err error) error {
	rep.OK = err == nil
	if err != nil {
		rep.Error = err.Error()
		var bad *audit.VerifyError
		if errors.As(err, &bad) {
			rep.BadFile, rep.BadLine = bad.File, bad.Line
		}
	}
	if perr := printJSON(out, rep); perr != nil {
		return perr
	}
	return err
}

// checkpointsJSON is `audit checkpoints --json`'s object.
type checkpointsJSON struct {
	Brokerd []checkpointJSON `json:"brokerd"`
	Witness []checkpointJSON `json:"witness"`
	// WitnessTrusts is the key the witness trusts, FirstUse when it first
	// trusted it ("" when the witness's files do not say).
	WitnessTrusts string `json:"witness_trusts"`
	FirstUse      string `json:"first_use"`
	Differ        int    `json:"differ"` // the witness's checkpoints that differ from brokerd's (exit 1)
}

// checkpointJSON is one checkpoint against the other side's list.
type checkpointJSON struct {
	Seq    uint64          `json:"seq"`
	ID     string          `json:"id"` // the tree's root, or a legacy one's chain hash
	Signed string          `json:"signed"`
	Legacy bool            `json:"legacy"`
	End    *audit.Position `json:"end"`    // brokerd's: where the head ends in the log; null for the witness's
	Agrees bool            `json:"agrees"` // the other side holds the same checkpoint
	// Differs is the other side's id at this seq when it is another.
	Differs *string `json:"differs"`
	// BrokerdHasNone marks a witness's checkpoint past brokerd's newest.
	BrokerdHasNone bool `json:"brokerd_has_none"`
}

func checkpointRows(list, other []audit.Checkpoint, withEnd bool) []checkpointJSON {
	rows := []checkpointJSON{}
	for _, cp := range list {
		st := standOf(cp, other)
		row := checkpointJSON{Seq: cp.Seq, ID: cp.ID().String(), Signed: cp.Time.String(), Legacy: cp.Legacy, Agrees: st.found && !st.differs}
		if withEnd {
			end := cp.End
			row.End = &end
		}
		if st.differs {
			id := st.other.String()
			row.Differs = &id
		}
		rows = append(rows, row)
	}
	return rows
}

// witnessTrust is the key the witness trusts and when it first did, from
// its files; the caller neutralises them before a terminal sees them.
func witnessTrust(wdir string) (key, firstUse string) {
	keys, err := os.ReadFile(filepath.Join(wdir, audit.WitnessKeyName))
	if err != nil {
		return "", ""
	}
	key, _, _ = strings.Cut(strings.TrimSpace(string(keys)), "\n")
	if first, err := os.ReadFile(filepath.Join(wdir, "first-use")); err == nil {
		firstUse, _, _ = strings.Cut(strings.TrimSpace(string(first)), " ")
	}
	return key, firstUse
}

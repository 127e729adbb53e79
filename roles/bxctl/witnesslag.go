package bxctl

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/termtext"
)

// witnessLine says how far the audit witness's copy of the checkpoints is
// behind brokerd's newest (DESIGN.md section 14), read from audit/ and
// witness/ directly, as `audit verify` reads them: status connects to no
// role. It is "" when brokerd has signed no checkpoint yet.
func witnessLine(paths config.Paths, now time.Time) string {
	auditDir, witnessDir := paths.Join("audit"), paths.Join("witness")
	v, err := audit.ReadVerifierKey(filepath.Join(auditDir, audit.VerifierKeyName))
	if err != nil || v == nil {
		return sayIf(err)
	}
	mine, err := audit.NewestCheckpoint(auditDir, v)
	if err != nil || mine == nil {
		return sayIf(err)
	}
	wv, err := audit.WitnessKeys(witnessDir)
	var theirs *audit.Checkpoint
	if err == nil && wv != nil {
		theirs, err = audit.NewestCheckpoint(witnessDir, wv)
	}
	switch {
	case err != nil:
		return sayIf(err)
	case theirs == nil:
		return fmt.Sprintf("audit witness: holds no checkpoint; brokerd's newest is seq %d, signed %s ago", mine.Seq, age(now, mine))
	case theirs.Seq == mine.Seq && theirs.Legacy == mine.Legacy && theirs.ID() != mine.ID():
		return fmt.Sprintf("audit witness: DIFFERS: it holds seq %d with hash %s, brokerd's checkpoint of seq %d says %s; run boxmaker audit verify",
			theirs.Seq, theirs.ID(), mine.Seq, mine.ID())
	case theirs.Seq >= mine.Seq:
		return fmt.Sprintf("audit witness: up to date at seq %d, signed %s ago", theirs.Seq, age(now, theirs))
	}
	return fmt.Sprintf("audit witness: LAGS by %d records and %s: it holds seq %d (signed %s ago), brokerd's newest is seq %d (signed %s ago)",
		mine.Seq-theirs.Seq, mine.Time.Time().Sub(theirs.Time.Time()).Round(time.Second), theirs.Seq, age(now, theirs), mine.Seq, age(now, mine))
}

func age(now time.Time, cp *audit.Checkpoint) time.Duration {
	return max(now.Sub(cp.Time.Time()), 0).Round(time.Second)
}

func sayIf(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf("audit witness: cannot tell (%v)", err)
}

// printWitnessLine adds the witness's line to status, when there is one.
func printWitnessLine(out io.Writer, paths config.Paths) {
	if line := witnessLine(paths, time.Now()); line != "" {
		fmt.Fprintln(out, termtext.Line(line)) // the files are brokerd's and the witness's to write
	}
}

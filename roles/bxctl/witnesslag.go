package bxctl

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/termtext"

	"github.com/urfave/cli/v3"
)

// witnessLine says how far the audit witness's copy of the checkpoints is
// behind brokerd's newest (DESIGN.md section 14), and behind the log's head
// when by more than brokerd's checkpoint interval (a) lets it be (a brokerd
// that stopped signing leaves its own checkpoints and the witness's
// agreeing), read from audit/ and witness/ directly, as `audit verify`
// reads them: status connects to no role. It is "" when brokerd has signed
// no checkpoint yet.
func witnessLine(paths config.Paths, a config.Audit, now time.Time) string {
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
	}
	if behind, err := behindLog(auditDir, *theirs, a, now); err != nil || behind != "" {
		return cmp.Or(sayIf(err), "audit witness: BEHIND THE LOG: "+behind)
	}
	if theirs.Seq >= mine.Seq {
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

// behindLog says how far the log's head is past the witness's newest
// checkpoint cp when it is past by more than brokerd's checkpoint interval
// allows: more than twice checkpoint_records records, or a record older
// than twice checkpoint_interval that no witnessed checkpoint covers.
// brokerd signs within one interval; the second is slack for the signing,
// the delivery and its retries, so that a witness keeping up is never
// reported. It is "" when the witness keeps up with the log.
func behindLog(auditDir string, cp audit.Checkpoint, a config.Audit, now time.Time) (string, error) {
	s, err := audit.RecordsSince(auditDir, cp)
	if err != nil || s.Records == 0 {
		return "", err
	}
	waited := max(now.Sub(s.Oldest.Time()), 0).Round(time.Second)
	if s.Records <= 2*a.CheckpointRecords && waited <= 2*a.CheckpointInterval.D() {
		return "", nil
	}
	return fmt.Sprintf("the log's head is seq %d, %d records past the witness's newest checkpoint (seq %d, signed %s ago), "+
		"and the oldest of them was written %s ago; brokerd signs one after %d records or %s: "+
		"brokerd has stopped signing checkpoints, or they do not reach the witness",
		s.Head.Seq, s.Records, cp.Seq, age(now, &cp), waited, a.CheckpointRecords, a.CheckpointInterval.D()), nil
}

// witnessKeepsUp fails `audit verify` when the home's log is past its
// witness's newest checkpoint by more than the checkpoint interval allows
// (behindLog), with config.toml's interval. A log named as DIR, or a
// witness's copy named by --witness (one from the owner's DM, or kept
// elsewhere), is a snapshot, older than the live log by its nature: only
// the home's own log and witness/ are checked. Nothing to check when the
// witness holds no checkpoint (verify says so).
func witnessKeepsUp(cmd *cli.Command, auditDir string, theirs []audit.Checkpoint) error {
	if len(theirs) == 0 || cmd.Args().Len() > 0 || cmd.String("witness") != "" {
		return nil
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	cfg, err := config.Load(paths.Config)
	if err != nil {
		return fmt.Errorf("audit: the checkpoint interval: %w", err)
	}
	behind, err := behindLog(auditDir, theirs[len(theirs)-1], cfg.Audit, time.Now())
	if err == nil && behind != "" {
		err = errors.New("the audit witness is behind the log: " + behind)
	}
	return err
}

// printWitnessLine adds the witness's line to status, when there is one.
func printWitnessLine(out io.Writer, paths config.Paths) {
	cfg, err := config.Load(paths.Config)
	if err != nil {
		fmt.Fprintln(out, termtext.Line(sayIf(fmt.Errorf("the checkpoint interval: %w", err))))
		return
	}
	if line := witnessLine(paths, cfg.Audit, time.Now()); line != "" {
		fmt.Fprintln(out, termtext.Line(line)) // the files are brokerd's and the witness's to write
	}
}

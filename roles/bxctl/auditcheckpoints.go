package bxctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"boxmaker/audit"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// auditCheckpoints lists brokerd's checkpoints and the witness's, oldest
// first, marking each of brokerd's the witness holds too and every
// difference; it fails (exit 1) when the two differ at a seq, or the
// witness holds a seq past brokerd's newest (brokerd's were cut off).
func auditCheckpoints(_ context.Context, cmd *cli.Command) error {
	dir, err := auditDir(cmd)
	if err != nil {
		return err
	}
	mine, err := readCheckpoints(dir)
	if err != nil {
		return err
	}
	wdir := witnessDir(cmd, dir)
	theirs, err := audit.ReadWitness(wdir)
	if err != nil {
		return err
	}
	rep := checkpointsJSON{Brokerd: checkpointRows(mine, theirs, true), Witness: checkpointRows(theirs, mine, false)}
	for i, cp := range theirs {
		w := &rep.Witness[i]
		w.BrokerdHasNone = !w.Agrees && w.Differs == nil && (len(mine) == 0 || cp.Seq > mine[len(mine)-1].Seq)
		if w.Differs != nil || w.BrokerdHasNone {
			rep.Differ++
		}
	}
	rep.WitnessTrusts, rep.FirstUse = witnessTrust(wdir)
	out := cmd.Root().Writer
	if cmd.Bool("json") {
		err = printJSON(out, rep)
	} else {
		writeCheckpoints(out, dir, wdir, mine, theirs, rep)
	}
	if err == nil && rep.Differ > 0 {
		err = fmt.Errorf("audit: %d of the witness's checkpoints differ from brokerd's; check the log with boxmaker audit verify", rep.Differ)
	}
	return err
}

func writeCheckpoints(out io.Writer, dir, wdir string, mine, theirs []audit.Checkpoint, rep checkpointsJSON) {
	fmt.Fprintf(out, "brokerd's, in %s:\n", filepath.Join(dir, audit.CheckpointsName))
	for _, cp := range mine {
		fmt.Fprintf(out, "  seq %d %s signed %s, ends %s line %d%s\n", cp.Seq, cp.ID(), cp.Time, cp.End.File, cp.End.Line, markAgainst(cp, theirs, "witnessed", "the witness's"))
	}
	if len(mine) == 0 {
		fmt.Fprintln(out, "  no checkpoints")
	}
	fmt.Fprintf(out, "the witness's, in %s:\n", filepath.Join(wdir, audit.CheckpointsName))
	for i, cp := range theirs {
		mark := markAgainst(cp, mine, "", "brokerd's")
		if rep.Witness[i].BrokerdHasNone {
			mark = "  BROKERD HAS NONE: its checkpoints end before this one"
		}
		fmt.Fprintf(out, "  seq %d %s signed %s%s\n", cp.Seq, cp.ID(), cp.Time, mark)
	}
	if len(theirs) == 0 {
		fmt.Fprintln(out, "  no checkpoints")
	}
	sayTrust(out, rep)
}

// sayTrust shows the key the witness trusts and when it first trusted it,
// for the owner to check against audit/checkpoint.pub: the witness learns
// brokerd's key on first use. The files are the witness's: each line is
// neutralised before it reaches the terminal.
func sayTrust(out io.Writer, rep checkpointsJSON) {
	if rep.WitnessTrusts == "" && rep.FirstUse == "" {
		return
	}
	fmt.Fprintln(out, termtext.Line("the witness trusts brokerd's key "+rep.WitnessTrusts))
	if rep.FirstUse != "" {
		fmt.Fprintln(out, termtext.Line("  on first use, at "+rep.FirstUse+"; check it against audit/"+audit.VerifierKeyName))
	}
}

// standing is how a checkpoint stands against the other list's of its seq.
type standing struct {
	found, differs bool
	other          wire.Hash32 // the other's id, when it differs
}

func standOf(cp audit.Checkpoint, other []audit.Checkpoint) standing {
	for _, o := range other {
		switch {
		case o.Seq != cp.Seq:
		case o.Legacy != cp.Legacy:
			return standing{}
		case o.ID() != cp.ID():
			return standing{found: true, differs: true, other: o.ID()}
		default:
			return standing{found: true}
		}
	}
	return standing{}
}

// markAgainst says how cp stands against the other list's checkpoint of
// its seq: same names the agreement ("" to say nothing), whose the other list.
func markAgainst(cp audit.Checkpoint, other []audit.Checkpoint, same, whose string) string {
	switch st := standOf(cp, other); {
	case st.differs:
		return fmt.Sprintf("  DIFFERS: %s says %s", whose, st.other)
	case st.found && same != "":
		return "  (" + same + ")"
	}
	return ""
}

// witnessDir is --witness, else the witness/ beside the audit directory.
func witnessDir(cmd *cli.Command, auditDir string) string {
	if w := cmd.String("witness"); w != "" {
		return w
	}
	return filepath.Join(filepath.Dir(auditDir), "witness")
}

// readCheckpoints reads dir's checkpoints, each checked with the verifier
// key brokerd keeps beside them; none when brokerd never signed one.
func readCheckpoints(dir string) ([]audit.Checkpoint, error) {
	v, err := audit.ReadVerifierKey(filepath.Join(dir, audit.VerifierKeyName))
	if err != nil {
		return nil, err
	}
	if v == nil {
		if _, err := os.Lstat(filepath.Join(dir, audit.CheckpointsName)); err == nil {
			return nil, fmt.Errorf("audit: %s is there but %s, the key that checks it, is not", audit.CheckpointsName, audit.VerifierKeyName)
		}
		return nil, nil
	}
	return audit.ReadCheckpoints(dir, v)
}

// verifyAudit checks the whole chain against every checkpoint, brokerd's
// and the witness's, or with --from-checkpoint only the records after the
// newest of brokerd's and the witness's newest record; then that the log is
// not past the witness's newest checkpoint by more than the checkpoint
// interval allows (witnessKeepsUp). With --json it prints verifyJSON's
// object, failing or not (auditjson.go).
func verifyAudit(_ context.Context, cmd *cli.Command) error {
	out := cmd.Root().Writer
	if cmd.Bool("json") {
		rep, err := checkAudit(cmd, io.Discard)
		return printVerifyJSON(out, rep, err)
	}
	_, err := checkAudit(cmd, out)
	return err
}

// checkAudit is audit verify's work, its lines written to out.
func checkAudit(cmd *cli.Command, out io.Writer) (verifyJSON, error) {
	var rep verifyJSON
	dir, err := auditDir(cmd)
	if err != nil {
		return rep, err
	}
	mine, err := readCheckpoints(dir)
	if err != nil {
		return rep, err
	}
	theirs, err := audit.ReadWitness(witnessDir(cmd, dir))
	if err != nil {
		return rep, err
	}
	rep.Checkpoints, rep.WitnessCheckpoints = len(mine), len(theirs)
	if cmd.Bool("from-checkpoint") && len(mine)+len(theirs) > 0 {
		res, from, err := verifyFromCheckpoints(out, dir, mine, theirs)
		rep.setResult(res, &from)
		if err != nil {
			return rep, err
		}
		return rep, witnessKeepsUp(cmd, dir, theirs)
	}
	res, err := audit.VerifyAgainst(dir, audit.MergeCheckpoints(mine, theirs))
	if err != nil {
		return rep, err
	}
	rep.setResult(res, nil)
	fmt.Fprintln(out, res)
	if len(mine) > 0 {
		fmt.Fprintf(out, "matches %d checkpoints, the newest of seq %d signed %s\n", len(mine), mine[len(mine)-1].Seq, mine[len(mine)-1].Time)
	}
	sayWitness(out, mine, theirs)
	return rep, witnessKeepsUp(cmd, dir, theirs)
}

// verifyFromCheckpoints checks the records after brokerd's newest
// checkpoint (the witness's when brokerd has none) by the chain, and every
// other checkpoint, brokerd's and the witness's, by proofs from the tree:
// the witness's newest by an inclusion proof of its last record against its
// root, each of the tree's form by a consistency proof with the newest.
// Legacy ones are checked by their chain hash where they end. It returns
// what the chain check found and the seq it started from.
func verifyFromCheckpoints(out io.Writer, dir string, mine, theirs []audit.Checkpoint) (audit.Result, uint64, error) {
	var from audit.Checkpoint
	if len(mine) > 0 {
		from = mine[len(mine)-1]
	} else {
		from = theirs[len(theirs)-1]
	}
	var res audit.Result
	var err error
	if from.End.File != "" {
		res, err = audit.VerifyFromCheckpoint(dir, from)
	} else {
		err = audit.CheckCheckpoint(dir, from)
		res.Head.Seq = from.Seq
	}
	if err != nil {
		return res, from.Seq, err
	}
	all := audit.MergeCheckpoints(mine, theirs)
	newest := all[len(all)-1]
	if err := audit.CheckCheckpoint(dir, newest); err != nil {
		return res, from.Seq, err
	}
	for _, cp := range all {
		if err := audit.CheckConsistent(dir, cp, newest); err != nil {
			return res, from.Seq, err
		}
	}
	fmt.Fprintf(out, "ok from the checkpoint of seq %d: %d records in %d files since, %s\n", from.Seq, res.Head.Seq-from.Seq, res.Files, res.Head)
	fmt.Fprintf(out, "%d checkpoints proven consistent with the newest (size %d)\n", len(all), newest.Seq)
	sayWitness(out, mine, theirs)
	return res, from.Seq, nil
}

func sayWitness(out io.Writer, mine, theirs []audit.Checkpoint) {
	if len(theirs) == 0 {
		if len(mine) > 0 {
			fmt.Fprintln(out, "the witness holds no checkpoints: the log was checked against brokerd's alone")
		}
		return
	}
	last := theirs[len(theirs)-1]
	fmt.Fprintf(out, "matches the witness's %d checkpoints, the newest of seq %d signed %s\n", len(theirs), last.Seq, last.Time)
}

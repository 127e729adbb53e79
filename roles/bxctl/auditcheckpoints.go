package bxctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"

	"github.com/urfave/cli/v3"
	"golang.org/x/mod/sumdb/note"
)

// auditCheckpoints lists the log's signed checkpoints, oldest first.
func auditCheckpoints(_ context.Context, cmd *cli.Command) error {
	dir, err := auditDir(cmd)
	if err != nil {
		return err
	}
	cps, err := readCheckpoints(dir)
	if err != nil {
		return err
	}
	for _, cp := range cps {
		fmt.Fprintf(cmd.Root().Writer, "seq %d %s signed %s, ends %s line %d\n", cp.Seq, cp.Hash, cp.Time, cp.End.File, cp.End.Line)
	}
	if len(cps) == 0 {
		fmt.Fprintln(cmd.Root().Writer, "no checkpoints")
	}
	return nil
}

// readCheckpoints reads dir's checkpoints, each checked with the verifier
// key brokerd keeps beside them; none when brokerd never signed one.
func readCheckpoints(dir string) ([]audit.Checkpoint, error) {
	vkey, err := os.ReadFile(filepath.Join(dir, audit.VerifierKeyName))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, audit.CheckpointsName)); err == nil {
			return nil, fmt.Errorf("audit: %s is there but %s, the key that checks it, is not", audit.CheckpointsName, audit.VerifierKeyName)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", audit.VerifierKeyName, err)
	}
	return audit.ReadCheckpoints(dir, v)
}

// verifyAudit checks the whole chain against every checkpoint, or with
// --from-checkpoint only the records after the newest one.
func verifyAudit(_ context.Context, cmd *cli.Command) error {
	dir, err := auditDir(cmd)
	if err != nil {
		return err
	}
	cps, err := readCheckpoints(dir)
	if err != nil {
		return err
	}
	out := cmd.Root().Writer
	if cmd.Bool("from-checkpoint") && len(cps) > 0 {
		last := cps[len(cps)-1]
		res, err := audit.VerifyFromCheckpoint(dir, last)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok from the checkpoint of seq %d: %d records in %d files since, %s\n", last.Seq, res.Head.Seq-last.Seq, res.Files, res.Head)
		return nil
	}
	res, err := audit.VerifyAgainst(dir, cps)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res)
	if len(cps) > 0 {
		fmt.Fprintf(out, "matches %d checkpoints, the newest of seq %d signed %s\n", len(cps), cps[len(cps)-1].Seq, cps[len(cps)-1].Time)
	}
	return nil
}

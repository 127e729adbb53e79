package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"
	"boxmaker/roles"

	"github.com/urfave/cli/v3"
	"golang.org/x/mod/sumdb/note"
)

// auditRebase is the owner's recovery when brokerd refuses a log shorter
// than, or different from, its last checkpoint (DESIGN.md section 14): with
// brokerd stopped, the old audit/ is moved aside with brokerd's copy of the
// last checkpoint, and a new chain begins with a record naming both.
func auditRebase(_ context.Context, cmd *cli.Command) error {
	reason := strings.TrimSpace(cmd.String("reason"))
	if reason == "" {
		return usagef("audit rebase: --reason must say why the old chain is given up")
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	dir, brokerDir := paths.Join("audit"), paths.Join("broker")
	v, err := rebaseVerifier(dir, brokerDir)
	if err != nil {
		return err
	}
	witnessed, err := audit.ReadWitness(paths.Join("witness"))
	if err != nil {
		return fmt.Errorf("audit rebase: %w", err)
	}
	var newest *audit.Checkpoint
	if len(witnessed) > 0 {
		newest = &witnessed[len(witnessed)-1]
	}
	aside, rec, err := audit.Rebase(audit.RebaseConfig{
		Dir: dir, Mirror: filepath.Join(brokerDir, "checkpoint.last"), Verifier: v, Witnessed: newest,
		Reason: reason, Approver: "local:" + roles.UserName(uint32(os.Getuid())),
	})
	if err != nil {
		return err
	}
	out := cmd.Root().Writer
	fmt.Fprintf(out, "the old log and its checkpoints are in %s\n", aside)
	if err := witnessAside(paths.Join("witness"), aside, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "new chain: seq %d %s %s\n", rec.Seq, rec.Tool, rec.Arguments)
	return keepAuditName(paths.Home, out)
}

// keepAuditName writes the log's name into a home made before init chose
// one, so that the new chain's origin no longer follows the host's name.
func keepAuditName(home string, out io.Writer) error {
	path := filepath.Join(home, audit.NameFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err == nil {
		_, err = f.WriteString(audit.DefaultName() + "\n")
		err = errors.Join(err, f.Sync(), f.Close())
	}
	if err != nil {
		return fmt.Errorf("audit rebase: keep the log's name: %w", err)
	}
	fmt.Fprintf(out, "the log's name, %s, is kept in %s\n", audit.DefaultName(), path)
	return nil
}

// witnessAside moves the witness's copy of the old chain's checkpoints
// into the directory the old log went to, so that the witness takes the
// new chain's from seq 1 on; it keeps the key it trusts, which is still
// brokerd's. Nothing is deleted. Renames never follow a link, and witness/
// itself sits in the home, which only root writes.
func witnessAside(witnessDir, aside string, out io.Writer) error {
	held, err := audit.ReadWitness(witnessDir)
	if err != nil {
		return fmt.Errorf("audit rebase: the old log is in %s, but the witness's copy could not be read: %w", aside, err)
	}
	for _, name := range []string{audit.CheckpointsName, "posted"} {
		err := os.Rename(filepath.Join(witnessDir, name), filepath.Join(aside, "witness-"+name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit rebase: the old log is in %s, but the witness's %s could not join it: %w", aside, name, err)
		}
	}
	if len(held) > 0 {
		last := held[len(held)-1]
		fmt.Fprintf(out, "the witness's copy, up to seq %d %s (signed %s), is in %s\n", last.Seq, last.ID(), last.Time, filepath.Join(aside, "witness-"+audit.CheckpointsName))
	}
	return nil
}

// rebaseVerifier is the checkpoint key's verifier: beside the log, else in
// brokerd's key file (when audit/ was emptied); nil when brokerd never made
// a key, so no checkpoint can exist.
func rebaseVerifier(dir, brokerDir string) (note.Verifiers, error) {
	v, err := audit.ReadVerifierKey(filepath.Join(dir, audit.VerifierKeyName))
	if err != nil || v != nil {
		return v, err
	}
	key, err := os.ReadFile(filepath.Join(brokerDir, "checkpoint.key"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(key)), "\n")
	v, err = audit.ReadVerifierKeyText(lines[1:])
	if err != nil {
		return nil, fmt.Errorf("audit rebase: checkpoint verifier key: %w", err)
	}
	return v, nil
}

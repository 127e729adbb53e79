package bxctl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"boxmaker/audit"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

// newestTreeCheckpoint is the newest checkpoint of the tree's form, the
// witness's copy (cosigned) when it holds one of that size or a newer one,
// brokerd's otherwise.
func newestTreeCheckpoint(cmd *cli.Command, dir string) (audit.Checkpoint, error) {
	mine, err := readCheckpoints(dir)
	if err != nil {
		return audit.Checkpoint{}, err
	}
	theirs, err := audit.ReadWitness(witnessDir(cmd, dir))
	if err != nil {
		return audit.Checkpoint{}, err
	}
	var best *audit.Checkpoint
	for _, list := range [][]audit.Checkpoint{mine, theirs} {
		for i := len(list) - 1; i >= 0; i-- {
			if cp := list[i]; !cp.Legacy && (best == nil || cp.Seq >= best.Seq) {
				best = &list[i]
				break
			}
		}
	}
	if best == nil {
		return audit.Checkpoint{}, errors.New("audit: no checkpoint of the tree yet (brokerd signs one after its first records, and at a clean stop)")
	}
	return *best, nil
}

func auditCheckpoint(_ context.Context, cmd *cli.Command) error {
	dir, err := auditDir(cmd)
	if err != nil {
		return err
	}
	cp, err := newestTreeCheckpoint(cmd, dir)
	if err != nil {
		return err
	}
	text := cp.Note()
	// The note was checked and parsed strictly, but it is brokerd's and
	// the witness's file: nothing but printable text and newlines reaches
	// the terminal.
	if strings.IndexFunc(text, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 }) >= 0 {
		return errors.New("audit: the checkpoint's note holds control characters: not printed")
	}
	_, err = fmt.Fprint(cmd.Root().Writer, text)
	return err
}

// proofJSON is `audit prove --json`'s object.
type proofJSON struct {
	Index    uint64   `json:"index"`
	Size     uint64   `json:"size"`
	Root     string   `json:"root"`
	LeafHash string   `json:"leaf_hash"`
	Proof    []string `json:"proof"`
}

func auditProve(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("audit prove takes one SEQ")
	}
	seq, err := strconv.ParseUint(cmd.Args().First(), 10, 64)
	if err != nil || seq == 0 {
		return usagef("audit prove: %q is not a record's seq", cmd.Args().First())
	}
	dir, err := auditDirOf(cmd)
	if err != nil {
		return err
	}
	cp, err := newestTreeCheckpoint(cmd, dir)
	if err != nil {
		return err
	}
	p, err := audit.Prove(dir, seq, cp)
	if err != nil {
		return err
	}
	b64 := func(h wire.Hash32) string { return base64.StdEncoding.EncodeToString(h[:]) }
	out := proofJSON{Index: p.Index, Size: p.Size, Root: b64(p.Root), LeafHash: b64(p.Leaf), Proof: []string{}}
	for _, h := range p.Hashes {
		out.Proof = append(out.Proof, b64(h))
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		data, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	whose := "brokerd's checkpoint"
	if cp.Witnessed {
		whose = "the witness's cosigned checkpoint"
	}
	fmt.Fprintf(w, "record %d is leaf %d of the tree of %d records, root %s (%s, checked)\n", seq, out.Index, out.Size, out.Root, whose)
	fmt.Fprintf(w, "leaf hash %s\n", out.LeafHash)
	for _, h := range out.Proof {
		fmt.Fprintf(w, "  %s\n", h)
	}
	return nil
}

// auditDirOf is the audit directory of the home (prove takes SEQ, not DIR).
func auditDirOf(cmd *cli.Command) (string, error) {
	paths, err := pathsOf(cmd)
	if err != nil {
		return "", err
	}
	return filepath.Join(paths.Home, "audit"), nil
}

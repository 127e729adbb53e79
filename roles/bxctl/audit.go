package bxctl

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf16"

	"boxmaker/audit"
	"boxmaker/roles/internal/termtext"

	"github.com/urfave/cli/v3"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "check and read the hash-chained audit log",
		Commands: []*cli.Command{{
			Name:      "verify",
			Usage:     "check every record's chain, seq and strict form, and the signed checkpoints; exit 1 naming the first bad file and line",
			ArgsUsage: "[DIR]",
			Flags: append(homeFlags(), &cli.BoolFlag{
				Name: "from-checkpoint", Usage: "check only the records after the newest checkpoint, and the witness's newest (fast for a large log)",
			}, witnessFlag(), jsonFlag("an object: ok, records, files, torn, head (seq, hash), from_checkpoint, checkpoints, witness_checkpoints, and error, bad_file, bad_line when it fails")),
			Action: verifyAudit,
		}, {
			Name:      "checkpoints",
			Usage:     "list brokerd's signed checkpoints of the chain's head and the witness's, marking any difference (exit 1)",
			ArgsUsage: "[DIR]",
			Flags:     append(homeFlags(), witnessFlag(), jsonFlag("an object: brokerd and witness (each an array of seq, id, signed, legacy, end, agrees, differs, brokerd_has_none), witness_trusts, first_use, differ")),
			Action:    auditCheckpoints,
		}, {
			Name:      "checkpoint",
			Usage:     "print the newest checkpoint, a C2SP signed note, with brokerd's signature and the witness's cosignature when it has one",
			ArgsUsage: "[DIR]",
			Flags:     append(homeFlags(), witnessFlag()),
			Action:    auditCheckpoint,
		}, {
			Name:      "prove",
			Usage:     "print an RFC 6962 inclusion proof of record SEQ in the tree the newest checkpoint signs, checked before it is printed",
			ArgsUsage: "SEQ",
			Flags: append(homeFlags(), witnessFlag(), &cli.BoolFlag{
				Name: "json", Usage: "print index, size, root, leaf hash and the proof's hashes (base64) as one JSON object",
			}),
			Action: auditProve,
		}, {
			Name:  "rebase",
			Usage: "with brokerd stopped, move the log that brokerd refuses aside and start a new chain whose first record names its last checkpoint and the reason",
			Flags: append(homeFlags(), &cli.StringFlag{
				Name: "reason", Required: true, Usage: "why the old chain is given up, recorded in the new chain's first record",
			}),
			Action: auditRebase,
		}, {
			Name:      "head",
			Usage:     "print the newest record's seq and hash, to keep a copy of the chain head elsewhere",
			ArgsUsage: "[DIR]",
			Flags:     homeFlags(),
			Action:    auditHead,
		}, {
			Name:      "tail",
			Usage:     "print the last records",
			ArgsUsage: "[DIR]",
			Flags: append(homeFlags(), &cli.IntFlag{
				Name: "n", Value: 10, Usage: "how many records",
			}),
			Action: auditTail,
		}},
	}
}

// witnessFlag names the witness's copy of the checkpoints: witness/ beside
// the audit directory unless it says otherwise (a copy kept elsewhere).
func witnessFlag() cli.Flag {
	return &cli.StringFlag{Name: "witness", Usage: "the witness's directory (default: witness/ beside the audit directory)"}
}

// auditDir is the DIR argument, else the home's audit/. A DIR needs no
// home: a copy of the log checked elsewhere (witnessKeepsUp leaves it be).
func auditDir(cmd *cli.Command) (string, error) {
	if cmd.Args().Present() {
		return dirArg(cmd, "")
	}
	paths, err := pathsOf(cmd)
	if err != nil {
		return "", err
	}
	return dirArg(cmd, paths.Join("audit"))
}

func auditHead(_ context.Context, cmd *cli.Command) error {
	dir, err := auditDir(cmd)
	if err != nil {
		return err
	}
	head, err := audit.ReadHead(dir)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.Root().Writer, head)
	return nil
}

func auditTail(_ context.Context, cmd *cli.Command) error {
	n := cmd.Int("n")
	if n < 1 {
		return usagef("audit tail: -n must be at least 1")
	}
	dir, err := auditDir(cmd)
	if err != nil {
		return err
	}
	lines, err := audit.Tail(dir, n)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(cmd.Root().Writer, jsonForTerminal(l))
	}
	return nil
}

// jsonForTerminal writes every character of a canonical JSON line that a
// terminal could interpret or hide (they occur only inside strings) as a
// JSON \u escape: the line stays valid JSON with the same value, for jq,
// and shows nothing a model chose to hide.
func jsonForTerminal(line string) string {
	var b strings.Builder
	for _, r := range line {
		switch {
		case termtext.Safe(r):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

package bxctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func wireCommand() *cli.Command {
	return &cli.Command{
		Name:  "wire",
		Usage: "work with the wire protocol's frames and records",
		Commands: []*cli.Command{{
			Name:      "check",
			Usage:     "decode frames, envelopes or log lines strictly and say what each holds",
			ArgsUsage: "FILE...",
			Description: "A .frame file holds one or more frames; a .json file one envelope, which must be\n" +
				"in canonical form; a .jsonl file one session log or audit record per line\n" +
				"(--as chooses which). Exit status 1 when anything is invalid.",
			Flags: []cli.Flag{&cli.StringFlag{
				Name:  "as",
				Usage: "what .jsonl lines hold: log or audit",
				Value: "log",
			}},
			Action: checkWireFiles,
		}},
	}
}

func checkWireFiles(_ context.Context, cmd *cli.Command) error {
	files := cmd.Args().Slice()
	if len(files) == 0 {
		return usagef("wire check: name at least one FILE")
	}
	as := cmd.String("as")
	if as != "log" && as != "audit" {
		return usagef("wire check: --as is log or audit, not %q", as)
	}
	bad := 0
	for _, file := range files {
		for _, line := range checkWireFile(file, as) {
			fmt.Fprintln(cmd.Root().Writer, line.text)
			if line.bad {
				bad++
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("wire check: %d invalid", bad)
	}
	return nil
}

type verdict struct {
	text string
	bad  bool
}

func ok(format string, args ...any) verdict { return verdict{text: fmt.Sprintf(format, args...)} }
func fail(format string, args ...any) verdict {
	return verdict{text: fmt.Sprintf(format, args...), bad: true}
}

func checkWireFile(file, as string) []verdict {
	data, err := os.ReadFile(file)
	if err != nil {
		return []verdict{fail("%v", err)}
	}
	switch filepath.Ext(file) {
	case ".frame":
		return checkFrames(file, data)
	case ".json":
		return []verdict{checkEnvelope(file, bytes.TrimSuffix(data, []byte("\n")))}
	case ".jsonl":
		return checkLines(file, data, as)
	default:
		return []verdict{fail("%s: not a .frame, .json or .jsonl file", file)}
	}
}

func checkFrames(file string, data []byte) []verdict {
	var out []verdict
	r := bytes.NewReader(data)
	for n := 1; ; n++ {
		e, err := wire.ReadEnvelope(r)
		switch {
		case errors.Is(err, io.EOF) && n > 1:
			return out
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return append(out, fail("%s: frame %d: truncated", file, n))
		case err != nil:
			return append(out, fail("%s: frame %d: %v", file, n, err))
		}
		out = append(out, ok("%s: frame %d: %s", file, n, describe(e)))
	}
}

func checkEnvelope(file string, data []byte) verdict {
	e, err := wire.Decode(data)
	if err != nil {
		return fail("%s: %v", file, err)
	}
	if canon, _ := wire.Encode(e); !bytes.Equal(canon, data) {
		return fail("%s: valid but not canonical; canonical form:\n%s", file, canon)
	}
	return ok("%s: %s", file, describe(e))
}

func describe(e wire.Envelope) string {
	return fmt.Sprintf("%s id %d final %t", wire.KindOf(e.Msg), e.ID, e.Final)
}

func checkLines(file string, data []byte, as string) []verdict {
	var out []verdict
	for n, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			break
		}
		text, complete := bytes.CutSuffix(line, []byte("\n"))
		if !complete {
			out = append(out, fail("%s:%d: torn line (no newline at the end)", file, n+1))
			continue
		}
		out = append(out, checkRecord(fmt.Sprintf("%s:%d", file, n+1), text, as))
	}
	return out
}

func checkRecord(where string, line []byte, as string) verdict {
	var canon []byte
	var err error
	if as == "audit" {
		var e wire.AuditEntry
		if e, err = wire.DecodeAuditEntry(line); err == nil {
			canon, err = wire.EncodeAuditEntry(e)
		}
	} else {
		var r wire.LogRecord
		if r, err = wire.DecodeLogRecord(line); err == nil {
			canon, err = wire.EncodeLogRecord(r)
		}
	}
	switch {
	case err != nil:
		return fail("%s: %v", where, err)
	case !bytes.Equal(canon, line):
		return fail("%s: valid but not canonical", where)
	}
	return ok("%s: ok", where)
}

package audit

import (
	"fmt"

	"boxmaker/wire"
)

// Head is the newest record of a chain: its seq and hash. A copy kept
// elsewhere lets a later check notice a log cut short or rewritten.
type Head struct {
	Seq  uint64
	Hash wire.Hash32 // 64 zeros for an empty log
}

func (h Head) String() string { return fmt.Sprintf("head seq %d %s", h.Seq, h.Hash) }

// Result is what Verify found in a log that verifies.
type Result struct {
	Records uint64 // records in the chain, recovery records included; equal to Head.Seq
	Files   int    // day files, empty ones included
	Torn    int    // torn lines, each described by a recovery record
	Head    Head
}

// String is the line `boxmaker audit verify` prints on success.
func (r Result) String() string {
	return fmt.Sprintf("ok: %d records in %d files, %s", r.Records, r.Files, r.Head)
}

// Verify checks the log in dir: every day file in date order, each line's
// strict decoding, seq, prev, time (never falling, on the file's date), and
// that every line that does not parse is followed by the recovery record that
// describes it. It hashes the stored bytes, parsing and hashing lines on
// every core while it checks the chain in order (pipeline.go), holds a
// bounded number of chunks of the log at once, and stops at the first
// problem, returned as a *VerifyError naming the file and line. A directory
// with no day files is an empty log and verifies.
//
// Verify takes no lock, so it may run beside the writer; a record being
// written at that moment can show as a last line without its newline.
func Verify(dir string) (Result, error) {
	s, err := scanDir(dir, false)
	if err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

func (s *chainScan) result() Result {
	return Result{
		Records: s.records,
		Files:   s.files,
		Torn:    s.torn,
		Head:    Head{Seq: s.head.seq, Hash: s.head.hash},
	}
}

package audit

import (
	"errors"
	"fmt"

	"boxmaker/wire"
)

// MaxLine is the longest line the writer stores and the verifier reads,
// without its newline. A record holds at most one request frame's arguments,
// so a frame's size plus room for the other members is enough; a longer line
// is refused when written and reported as bad when read.
const MaxLine = wire.MaxFrame + 64<<10

var (
	// ErrLocked: another Writer holds the directory's lock.
	ErrLocked = errors.New("audit: the log is locked by another writer")
	// ErrClosed: Append was called after Close.
	ErrClosed = errors.New("audit: writer closed")
	// ErrFailed: a write or fsync failed earlier. The Writer refuses every
	// later append; reopening the log (after a restart) recovers it.
	ErrFailed = errors.New("audit: writer stopped after a failed write or fsync")
)

// VerifyError names the first place where a log does not verify.
type VerifyError struct {
	File string // a name in the log's directory, such as "2026-09-18.jsonl"
	Line int    // 1-based line within File; 0 when the file itself is wrong
	Err  error  // why
}

func (e *VerifyError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("audit: %v", e.Err)
	}
	if e.Line == 0 {
		return fmt.Sprintf("audit: %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("audit: %s line %d: %v", e.File, e.Line, e.Err)
}

func (e *VerifyError) Unwrap() error { return e.Err }

// position is a line of the log: its file and 1-based number in that file.
type position struct {
	file string
	line int
}

func (p position) errorf(format string, args ...any) *VerifyError {
	return &VerifyError{File: p.file, Line: p.line, Err: fmt.Errorf(format, args...)}
}

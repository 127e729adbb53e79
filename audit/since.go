package audit

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"boxmaker/wire"
)

// Since is how far a log's head is past a checkpoint: the head, and when
// the first record after the checkpoint was written, the one that has
// waited longest for a checkpoint to cover it.
type Since struct {
	Head    Head
	Records uint64         // Head.Seq past the checkpoint's seq; 0 when it is not past
	Oldest  wire.Timestamp // the first record's after the checkpoint; zero when none
}

// RecordsSince reads the log's head and the first record after cp, from
// where cp says the chain ended, without reading the rest of the log or
// verifying the chain (Verify does that): `boxmaker status` and `audit
// verify` tell from it whether the witness's newest checkpoint is older
// than brokerd's checkpoint interval lets it be (DESIGN.md section 14).
func RecordsSince(dir string, cp Checkpoint) (Since, error) {
	head, err := ReadHead(dir)
	if err != nil || head.Seq <= cp.Seq {
		return Since{Head: head}, err
	}
	if cp.End.File == "" { // the witness's: found by its seq, O(log n)
		line, err := FindRecord(dir, cp.Seq+1)
		if err != nil {
			return Since{}, err
		}
		e, err := parseEntry(line)
		if err != nil {
			return Since{}, fmt.Errorf("audit: record %d: %w", cp.Seq+1, err)
		}
		return Since{Head: head, Records: head.Seq - cp.Seq, Oldest: e.time}, nil
	}
	files, err := listDayFiles(dir)
	if err != nil {
		return Since{}, err
	}
	i := slices.IndexFunc(files, func(f dayFile) bool { return f.name == cp.End.File })
	if i < 0 {
		return Since{}, cp.mismatch("the file it ends in is gone: the log is shorter than it was")
	}
	from := cp.End.Offset
	for _, f := range files[i:] {
		e, ok, err := firstEntryFrom(filepath.Join(dir, f.name), from)
		if err != nil {
			return Since{}, err
		}
		if ok && e.seq != cp.Seq+1 {
			return Since{}, cp.mismatch(fmt.Sprintf("the record after it is seq %d: the log was changed; run verify", e.seq))
		}
		if ok {
			return Since{Head: head, Records: head.Seq - cp.Seq, Oldest: e.time}, nil
		}
		from = 0
	}
	return Since{}, fmt.Errorf("audit: the head is seq %d, but no record follows the checkpoint of seq %d; run verify", head.Seq, cp.Seq)
}

// firstEntryFrom reads the first record in path from offset from; ok is
// false when the file ends before one. A line that does not parse is a torn
// one, which the recovery record after it describes (Verify checks that),
// so it is passed over.
func firstEntryFrom(path string, from int64) (entry, bool, error) {
	f, err := openRegular(path) // status runs as root on brokerd's files
	if err != nil {
		return entry{}, false, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return entry{}, false, fmt.Errorf("audit: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := readLine(r)
		if err == io.EOF {
			return entry{}, false, nil
		}
		if err != nil {
			return entry{}, false, fmt.Errorf("audit: %s: %w", filepath.Base(path), err)
		}
		if e, err := parseEntry(line); err == nil {
			return e, true, nil
		}
	}
}

// readLine reads one whole line, without its newline, of at most MaxLine
// bytes; io.EOF when no whole line is left.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		switch {
		case len(line) > MaxLine+1:
			return nil, fmt.Errorf("a line is longer than %d bytes", MaxLine)
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return nil, err // io.EOF: a last line without its newline is being written, or torn
		}
		return line[:len(line)-1], nil
	}
}

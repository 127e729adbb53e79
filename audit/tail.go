package audit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Tail returns the last n complete lines of the log in dir, oldest first, as
// stored: records, recovery records, and torn lines a recovery record has
// ended. A last line without its newline (torn, or being written) is left
// out. Tail reads backwards from the end of the newest files, so its cost
// does not grow with the log; it does not verify anything.
func Tail(dir string, n int) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("audit: tail of %d lines", n)
	}
	files, err := listDayFiles(dir)
	if err != nil {
		return nil, err
	}
	var lines []string
	for i := len(files) - 1; i >= 0 && len(lines) < n; i-- {
		more, err := lastLines(filepath.Join(dir, files[i].name), n-len(lines))
		if err != nil {
			return nil, err
		}
		lines = append(more, lines...)
	}
	return lines, nil
}

// ReadHead returns the seq and hash of the log's newest complete line, read
// from the end without verifying the chain (Verify does that, and its Result
// holds the same Head). An empty log's head is seq 0 and 64 zeros.
func ReadHead(dir string) (Head, error) {
	files, err := listDayFiles(dir)
	if err != nil {
		return Head{}, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		lines, err := lastLines(filepath.Join(dir, files[i].name), 1)
		if err != nil {
			return Head{}, err
		}
		if len(lines) == 0 {
			continue
		}
		line := []byte(lines[0])
		e, err := parseEntry(line)
		if err != nil {
			return Head{}, fmt.Errorf("audit: %s: the last complete line does not parse (%w); run verify", files[i].name, err)
		}
		return Head{Seq: e.seq, Hash: sha256.Sum256(line)}, nil
	}
	return Head{}, nil
}

// lastLines returns up to n complete lines from the end of the file, oldest
// first, without their newlines. Its readers run as root (status, audit
// head and tail) on brokerd's files: it never follows a link nor waits on
// a FIFO put in a day file's place.
func lastLines(path string, n int) ([]string, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// The newline ending each of the last n lines, and the one before the oldest.
	nls, err := newlinesFromEnd(f, st.Size(), n+1)
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", filepath.Base(path), err)
	}
	lines := make([]string, min(n, len(nls)))
	for k := range lines {
		start := int64(0)
		if k+1 < len(nls) {
			start = nls[k+1] + 1
		}
		if nls[k]-start > MaxLine {
			return nil, fmt.Errorf("audit: %s: line is longer than %d bytes", filepath.Base(path), MaxLine)
		}
		b := make([]byte, nls[k]-start)
		if _, err := f.ReadAt(b, start); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		lines[len(lines)-1-k] = string(b)
	}
	return lines, nil
}

// newlinesFromEnd returns the offsets of up to want newlines, newest first,
// reading the file backwards a block at a time.
func newlinesFromEnd(f *os.File, size int64, want int) ([]int64, error) {
	var nls []int64
	buf := make([]byte, 64<<10)
	for end := size; end > 0 && len(nls) < want; {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return nil, err
		}
		for i := len(chunk); len(nls) < want; {
			if i = bytes.LastIndexByte(chunk[:i], '\n'); i < 0 {
				break
			}
			nls = append(nls, start+int64(i))
		}
		if len(nls) == 0 && size-start > MaxLine {
			return nil, errors.New("no newline in the last MaxLine bytes")
		}
		end = start
	}
	return nls, nil
}

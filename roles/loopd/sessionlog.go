package loopd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"boxmaker/roles/internal/atomicfile"
	"boxmaker/wire"
)

// epochLog is one epoch file open for appending. Records are collected with
// add and reach the file only through flush, in one write followed by an
// fsync, so that the file holds whole steps of a turn and nothing between.
type epochLog struct {
	path string
	f    *os.File
	size int64  // bytes on disk that are known to be whole lines
	buf  []byte // encoded records not yet written
}

func epochFile(dir string, e wire.Epoch) string {
	return filepath.Join(dir, fmt.Sprintf("%d.jsonl", e))
}

// createEpoch creates an epoch file holding start, durable together with its
// directory entry. An existing file is an error: epochs are never rewritten.
func createEpoch(dir string, start wire.SessionStart) (*epochLog, error) {
	path := epochFile(dir, start.Epoch)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	l := &epochLog{path: path, f: f}
	if err := l.add(start); err != nil {
		l.close()
		return nil, err
	}
	err = l.flush()
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// openEpoch opens an epoch file whose first size bytes are whole steps;
// anything after them is what a crash left of a step, and is cut off.
func openEpoch(path string, size int64) (*epochLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != size {
		if err = f.Truncate(size); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &epochLog{path: path, f: f, size: size}, nil
}

// add encodes r for the next flush.
func (l *epochLog) add(r wire.LogRecord) error {
	line, err := wire.EncodeLogRecord(r)
	if err != nil {
		return fmt.Errorf("session log: %w", err)
	}
	l.buf = append(append(l.buf, line...), '\n')
	return nil
}

// flush writes what add collected and makes it durable. A failed write is
// cut back off, so that the file never keeps part of a step.
func (l *epochLog) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	n, err := l.f.Write(l.buf)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		l.buf = l.buf[:0]
		if n > 0 {
			if terr := l.f.Truncate(l.size); terr != nil {
				return fmt.Errorf("%s: %w (and cutting the partial write failed: %v)", l.path, err, terr)
			}
		}
		return fmt.Errorf("%s: %w", l.path, err)
	}
	l.size += int64(n)
	l.buf = l.buf[:0]
	return nil
}

// discard forgets records added since the last flush.
func (l *epochLog) discard() { l.buf = l.buf[:0] }

func (l *epochLog) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// epochRead is an epoch file as read from disk.
type epochRead struct {
	records []wire.LogRecord
	ends    []int64 // the offset just past each record's line
	size    int64   // bytes of whole lines; anything after them is torn
	torn    int     // bytes of a final line without its newline
}

// readEpoch reads and decodes every whole line of an epoch file. A final
// line without a newline is a write a crash cut short: it is reported in
// torn, never decoded. A whole line that does not decode is an error that
// names the file and line, since nothing loopd writes looks like that.
func readEpoch(path string) (epochRead, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return epochRead{}, err
	}
	var r epochRead
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			r.torn = len(data)
			break
		}
		rec, err := wire.DecodeLogRecord(data[:i])
		if err != nil {
			return r, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		r.records = append(r.records, rec)
		r.size += int64(i + 1)
		r.ends = append(r.ends, r.size)
		data = data[i+1:]
	}
	return r, nil
}

// syncDir makes a directory's entries durable (atomicfile.SyncDir).
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// writeDurably writes a small file whole, durably (atomicfile.Write).
func writeDurably(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600)
}

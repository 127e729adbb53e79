package audit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// at is the checkpoint of l's head as it is now, as brokerd would sign it.
func (l *testLog) at(file string) Checkpoint {
	return Checkpoint{Seq: l.head.seq, Hash: l.head.hash, Time: l.head.time,
		End: Position{File: file, Offset: int64(len(l.files[file])), Line: strings.Count(string(l.files[file]), "\n")}}
}

// RecordsSince finds the first record after a checkpoint where the
// checkpoint says the chain ended, in the same day file or the next one,
// passing over a torn line, and the head.
func TestRecordsSince(t *testing.T) {
	l := newTestLog(t)
	l.record("2026-12-01T10:00:00.000Z")
	l.record("2026-12-01T10:01:00.000Z")
	atTwo := l.at("2026-12-01.jsonl")
	l.record("2026-12-01T10:02:00.000Z")
	atThree := l.at("2026-12-01.jsonl")
	torn := []byte(`{"seq":4,"ti`)
	l.raw("2026-12-02.jsonl", append(torn, '\n'))
	l.recovery("2026-12-02T08:00:00.000Z", torn)
	l.record("2026-12-02T08:01:00.000Z")
	atHead := l.at("2026-12-02.jsonl")
	dir := l.write()
	for _, c := range []struct {
		name    string
		cp      Checkpoint
		records uint64
		oldest  string
	}{
		{"in the same file", atTwo, 3, "2026-12-01T10:02:00.000Z"},
		{"in the next file, after a torn line", atThree, 2, "2026-12-02T08:00:00.000Z"},
		{"at the head", atHead, 0, ""},
	} {
		got, err := RecordsSince(dir, c.cp)
		if err != nil || got.Head.Seq != 5 || got.Records != c.records || (c.oldest != "" && got.Oldest.String() != c.oldest) || (c.oldest == "" && got.Oldest != 0) {
			t.Errorf("%s: RecordsSince = %+v, %v; want %d records, the oldest at %q", c.name, got, err, c.records, c.oldest)
		}
	}
	wrong := atTwo
	wrong.End.Offset = atThree.End.Offset
	if _, err := RecordsSince(dir, wrong); err == nil || !strings.Contains(err.Error(), "the record after it is seq 4") {
		t.Errorf("a checkpoint whose end names another record: %v", err)
	}
}

// status reads brokerd's day files as root: a FIFO or a link put in a day
// file's place between the listing and the open is refused, never waited
// on or followed.
func TestLogEndReadersRefuseLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "2026-12-01.jsonl"), filepath.Join(dir, "2026-12-02.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, link} {
		if lines, err := lastLines(path, 1); err == nil {
			t.Errorf("lastLines(%s) = %q, want a refusal", path, lines)
		}
		if _, ok, err := firstEntryFrom(path, 0); err == nil {
			t.Errorf("firstEntryFrom(%s) = %v, want a refusal", path, ok)
		}
	}
}

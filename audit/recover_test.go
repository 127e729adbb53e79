package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// tornLog is two records and then a torn third, as a crash leaves it.
func tornLog(t *testing.T) *testLog {
	l := newTestLog(t)
	l.record("2026-09-17T08:00:00.000Z")
	l.record("2026-09-17T09:00:00.000Z")
	l.raw(day1, torn)
	return l
}

// openAndVerify opens dir at the time at, closes it, checks that nothing
// there was changed but by appending, and verifies the result.
func openAndVerify(t *testing.T, dir, at string) Result {
	t.Helper()
	before := readLog(t, dir)
	w := mustOpen(t, dir, WithClock(fixedClock(t, at)))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after := readLog(t, dir)
	for name, b := range before {
		if !bytes.HasPrefix(after[name], b) {
			t.Errorf("%s was changed, not appended to:\nbefore:\n%s\nafter:\n%s", name, b, after[name])
		}
	}
	res, err := Verify(dir)
	if err != nil {
		t.Fatalf("Verify after Open: %v", err)
	}
	return res
}

// A crash while the writer recovers must leave a log the next Open recovers.
func TestRecoveryAfterCrashDuringRecovery(t *testing.T) {
	full := func(l *testLog) []byte {
		// The recovery record a first Open would have written.
		return bytes.TrimSuffix(mustLine(t, l, func(k *testLog) { k.recovery("2026-09-17T11:00:00.000Z", torn) }), []byte("\n"))
	}
	cases := []struct {
		name          string
		after         func(l *testLog) []byte // what the first recovery got onto disk after the torn line
		records, torn int
	}{
		{"nothing", func(*testLog) []byte { return nil }, 3, 1},
		{"the newline", func(*testLog) []byte { return []byte("\n") }, 3, 1},
		{"the newline and part of the recovery record", func(l *testLog) []byte { return append([]byte("\n"), full(l)[:40]...) }, 3, 2},
		{"all but the recovery record's newline", func(l *testLog) []byte { return append([]byte("\n"), full(l)...) }, 3, 1},
		{"all of it", func(l *testLog) []byte { return append(append([]byte("\n"), full(l)...), '\n') }, 3, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := tornLog(t)
			l.raw(day1, c.after(l))
			res := openAndVerify(t, l.write(), "2026-09-17T12:00:00.000Z")
			if res.Records != uint64(c.records) || res.Torn != c.torn {
				t.Errorf("Verify = %+v, want %d records, %d torn", res, c.records, c.torn)
			}
		})
	}
}

// mustLine returns the line that add appends to a copy of l's chain state.
func mustLine(t *testing.T, l *testLog, add func(*testLog)) []byte {
	t.Helper()
	k := &testLog{t: t, head: l.head, call: l.call, files: map[string][]byte{}}
	add(k)
	for _, b := range k.files {
		return b
	}
	t.Fatal("nothing added")
	return nil
}

// A last line that lacks only its newline was written whole: it gets its
// newline and no recovery record.
func TestOpenEndsWholeLastLine(t *testing.T) {
	l := newTestLog(t)
	l.record("2026-09-17T08:00:00.000Z")
	line := l.record("2026-09-17T09:00:00.000Z")
	l.files[day1] = bytes.TrimSuffix(l.files[day1], []byte("\n"))
	dir := l.write()
	res := openAndVerify(t, dir, "2026-09-17T12:00:00.000Z")
	if res.Records != 2 || res.Torn != 0 || res.Head.Hash != hashOf(line) {
		t.Errorf("Verify = %+v, want the 2 records and no recovery", res)
	}
}

func TestRecoveryGoesToTheFileOfItsDate(t *testing.T) {
	dir := tornLog(t).write()
	res := openAndVerify(t, dir, "2026-09-18T06:00:00.000Z")
	if res.Records != 3 || res.Torn != 1 || res.Files != 2 {
		t.Errorf("Verify = %+v, want 3 records in 2 files, 1 torn", res)
	}
	day1Bytes, _ := os.ReadFile(filepath.Join(dir, day1))
	if !bytes.HasSuffix(day1Bytes, append(torn, '\n')) {
		t.Errorf("the torn line was not ended in place")
	}
}

// A crash right after a new day file was created leaves a file holding only
// a torn line.
func TestRecoveryOfNewFileHoldingOnlyATornLine(t *testing.T) {
	l := newTestLog(t)
	l.record("2026-09-17T08:00:00.000Z")
	l.raw(day2, []byte(`{"seq":2,"ti`))
	res := openAndVerify(t, l.write(), "2026-09-18T06:00:00.000Z")
	if res.Records != 2 || res.Torn != 1 || res.Files != 2 {
		t.Errorf("Verify = %+v, want 2 records in 2 files, 1 torn", res)
	}
}

// Records never go into a file older than the newest, even an empty one, so
// that file order stays chain order.
func TestEmptyNewestFileIsTheFloor(t *testing.T) {
	l := newTestLog(t)
	l.record("2026-09-17T08:00:00.000Z")
	l.raw(day3, nil)
	dir := l.write()
	w := mustOpen(t, dir, WithClock(fixedClock(t, "2026-09-18T06:00:00.000Z")))
	r, err := w.Append(sampleRecord(t, 9))
	if err != nil {
		t.Fatal(err)
	}
	if r.Time != mustTime(t, "2026-09-19T00:00:00.000Z") {
		t.Errorf("record at %s, want the start of the newest file's day", r.Time)
	}
	if res, err := Verify(dir); err != nil || res.Records != 2 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
}

func TestReopenCleanLogChangesNothing(t *testing.T) {
	dir := copyDir(t, filepath.Join(fixtureDir, "torn-after"))
	before := readLog(t, dir)
	openAndVerify(t, dir, "2026-09-20T00:00:00.000Z")
	sameLog(t, readLog(t, dir), before)
}

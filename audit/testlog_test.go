package audit

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/wire"
)

// testLog builds audit logs in memory, record by record, for tests to write
// into a directory and then break in the way each test needs.
type testLog struct {
	t     testing.TB
	head  chainHead
	call  wire.CallID
	order []string
	files map[string][]byte
}

func newTestLog(t testing.TB) *testLog {
	return &testLog{t: t, files: map[string][]byte{}}
}

func mustTime(t testing.TB, s string) wire.Timestamp {
	t.Helper()
	ts, err := wire.ParseTimestamp(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func mustSession(t testing.TB, s string) wire.SessionID {
	t.Helper()
	id, err := wire.ParseSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// sampleRecord is a decision as brokerd would hand it to Append.
func sampleRecord(t testing.TB, call wire.CallID) wire.AuditRecord {
	return wire.AuditRecord{
		Session:      mustSession(t, "chat-1"),
		Call:         call,
		Tool:         "http_fetch",
		Arguments:    `{"url":"https://example.org/"}`,
		SessionTaint: wire.Private,
		Decision:     wire.DecisionAllowed{Grant: "fetch-docs"},
	}
}

// record appends a record chained to the last one, at time at, to the file
// of its date; edit may change it first (to break the chain on purpose).
func (l *testLog) record(at string, edit ...func(*wire.AuditRecord)) []byte {
	l.t.Helper()
	l.call++
	r := sampleRecord(l.t, l.call)
	r.Seq, r.Time, r.Prev = l.head.seq+1, mustTime(l.t, at), l.head.hash
	for _, e := range edit {
		e(&r)
	}
	return l.add(r)
}

// recovery appends a recovery record describing torn, chained to the last record.
func (l *testLog) recovery(at string, torn []byte, edit ...func(*wire.RecoveryRecord)) []byte {
	l.t.Helper()
	r := wire.RecoveryRecord{Seq: l.head.seq + 1, Time: mustTime(l.t, at), Prev: l.head.hash,
		Recovery: wire.Recovery{TornBytes: uint64(len(torn)), TornSHA256: sha256.Sum256(torn)}}
	for _, e := range edit {
		e(&r)
	}
	return l.add(r)
}

func (l *testLog) add(e wire.AuditEntry) []byte {
	l.t.Helper()
	line, err := wire.EncodeAuditEntry(e)
	if err != nil {
		l.t.Fatal(err)
	}
	seq, ts, _ := e.Chain()
	l.head = chainHead{seq: seq, hash: sha256.Sum256(line), time: ts}
	l.raw(dayName(dayOf(ts)), append(line, '\n'))
	return line
}

// raw appends bytes to a file as they are, newline or not.
func (l *testLog) raw(file string, b []byte) {
	if _, ok := l.files[file]; !ok {
		l.order = append(l.order, file)
	}
	l.files[file] = append(l.files[file], b...)
}

// write puts the log into a fresh directory and returns it.
func (l *testLog) write() string {
	l.t.Helper()
	dir := l.t.TempDir()
	for _, name := range l.order {
		if err := os.WriteFile(filepath.Join(dir, name), l.files[name], 0o640); err != nil {
			l.t.Fatal(err)
		}
	}
	return dir
}

// copyDir copies the files of src into a fresh directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// fixedClock returns a clock that always says at.
func fixedClock(t testing.TB, at string) func() time.Time {
	ts := mustTime(t, at)
	return func() time.Time { return ts.Time() }
}

package audit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

const fixtureDir = "../fixtures/audit"

type fixtureCase struct {
	Dir     string `toml:"dir"`
	OK      bool   `toml:"ok"`
	Records uint64 `toml:"records"`
	HeadSeq uint64 `toml:"head_seq"`
	Head    string `toml:"head"`
	Note    string `toml:"note"`
	BadFile string `toml:"bad_file"`
	BadLine int    `toml:"bad_line"`
}

func loadFixtureCases(t *testing.T) []fixtureCase {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "cases.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var doc struct {
		Case []fixtureCase `toml:"case"`
	}
	if err := toml.NewDecoder(f).DisallowUnknownFields().Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Case) == 0 {
		t.Fatal("cases.toml holds no cases")
	}
	return doc.Case
}

func TestVerifyFixtures(t *testing.T) {
	for _, c := range loadFixtureCases(t) {
		t.Run(c.Dir, func(t *testing.T) {
			res, err := Verify(filepath.Join(fixtureDir, c.Dir))
			if !c.OK {
				wantVerifyError(t, err, c.BadFile, c.BadLine, "")
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := "ok: " + itoa(c.Records) + " records in 2 files, head seq " + itoa(c.HeadSeq) + " " + c.Head
			if res.Records != c.Records || res.Head.Seq != c.HeadSeq || res.Head.Hash.String() != c.Head || res.String() != want {
				t.Errorf("Verify = %+v (%s), want records %d head seq %d %s", res, res, c.Records, c.HeadSeq, c.Head)
			}
		})
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// wantVerifyError checks that err is a *VerifyError at file and line whose
// message holds want.
func wantVerifyError(t *testing.T, err error, file string, line int, want string) {
	t.Helper()
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want a *VerifyError at %s line %d", err, file, line)
	}
	if ve.File != file || ve.Line != line {
		t.Errorf("error at %s line %d, want %s line %d: %v", ve.File, ve.Line, file, line, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to say %q", err, want)
	}
}

const (
	day1 = "2026-09-17.jsonl"
	day2 = "2026-09-18.jsonl"
	day3 = "2026-09-19.jsonl"
)

var torn = []byte(`{"seq":3,"time":"2026-09-17T10:00:00.000Z","prev":"ab`)

// Each case builds a log in a temporary directory that must fail at one line
// with a message that says why.
var badLogs = []struct {
	name  string
	build func(l *testLog) string
	file  string
	line  int
	want  string
}{
	{"recovery length does not match", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.recovery("2026-09-17T11:00:00.000Z", torn, func(r *wire.RecoveryRecord) { r.Recovery.TornBytes-- })
		return l.write()
	}, day1, 2, "describes 52 bytes"},
	{"recovery hash does not match", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.recovery("2026-09-17T11:00:00.000Z", torn[1:])
		return l.write()
	}, day1, 2, "describes 52 bytes with SHA-256"},
	{"two torn lines, the recovery describes only the second", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.raw(day1, []byte("{\"seq\":3,\n"))
		l.recovery("2026-09-17T11:00:00.000Z", []byte(`{"seq":3,`))
		return l.write()
	}, day1, 2, "(nor does the line after it), and the recovery record at line 4"},
	{"torn line followed by a record, not a recovery", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.record("2026-09-17T11:00:00.000Z")
		l.record("2026-09-17T12:00:00.000Z")
		return l.write()
	}, day1, 2, "line 3 of 2026-09-17.jsonl follows it but is not a recovery record"},
	{"torn final line with no recovery", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, torn)
		return l.write()
	}, day1, 2, "unexpected EOF), and no recovery record follows it before the file ends without a newline"},
	{"day file missing in the middle", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.record("2026-09-18T08:00:00.000Z")
		l.record("2026-09-19T08:00:00.000Z")
		delete(l.files, day2)
		l.order = []string{day1, day3}
		return l.write()
	}, day3, 1, "seq 3, want 2"},
	{"seq gap", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.record("2026-09-17T08:01:00.000Z", func(r *wire.AuditRecord) { r.Seq++ })
		return l.write()
	}, day1, 2, "seq 3, want 2"},
	{"seq repeated", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.record("2026-09-17T08:01:00.000Z")
		l.record("2026-09-17T08:02:00.000Z", func(r *wire.AuditRecord) { r.Seq-- })
		return l.write()
	}, day1, 3, "seq 2, want 3"},
	{"first seq is not 1", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z", func(r *wire.AuditRecord) { r.Seq = 0 })
		return l.write()
	}, day1, 1, "seq 0, want 1"},
	{"first prev is not zeros", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z", func(r *wire.AuditRecord) { r.Prev[0] = 1 })
		return l.write()
	}, day1, 1, "but the first record's prev is 64 zeros"},
	{"unknown field", func(l *testLog) string {
		line := l.record("2026-09-17T08:00:00.000Z")
		l.files[day1] = append(bytes.Replace(line, []byte(`{"seq"`), []byte(`{"extra":1,"seq"`), 1), '\n')
		return l.write()
	}, day1, 1, `unknown field "extra"`},
	{"duplicate member", func(l *testLog) string {
		line := l.record("2026-09-17T08:00:00.000Z")
		l.files[day1] = append(bytes.Replace(line, []byte(`{"seq":1,`), []byte(`{"seq":1,"seq":1,`), 1), '\n')
		return l.write()
	}, day1, 1, "duplicate"},
	{"recovery record with no torn line", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.recovery("2026-09-17T09:00:00.000Z", []byte("x"))
		return l.write()
	}, day1, 2, "no torn line comes before it"},
	{"recovery record with the wrong seq", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.recovery("2026-09-17T11:00:00.000Z", torn, func(r *wire.RecoveryRecord) { r.Seq++ })
		return l.write()
	}, day1, 3, "recovery record: seq 3, want 2"},
	{"recovery record chained to the torn line", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.recovery("2026-09-17T11:00:00.000Z", torn, func(r *wire.RecoveryRecord) { r.Prev = hashOf(torn) })
		return l.write()
	}, day1, 3, "recovery record: prev"},
	{"record in the wrong day file", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		line := l.record("2026-09-18T08:00:00.000Z")
		delete(l.files, day2)
		l.order = l.order[:1]
		l.raw(day1, append(line, '\n'))
		return l.write()
	}, day1, 2, "not on the date the file is named for"},
	{"time goes backwards", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.record("2026-09-17T07:00:00.000Z")
		return l.write()
	}, day1, 2, "is before the previous record's 2026-09-17T08:00:00.000Z"},
	{"unexpected file", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw("notes.txt", []byte("hello\n"))
		return l.write()
	}, "notes.txt", 0, "unexpected file"},
	{"a date that does not exist", func(l *testLog) string {
		l.raw("2026-02-30.jsonl", nil)
		return l.write()
	}, "2026-02-30.jsonl", 0, "unexpected file"},
	{"line too long", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(bytes.Repeat([]byte("x"), MaxLine+1), '\n'))
		return l.write()
	}, day1, 2, "longer than"},
	{"good last line without its newline", func(l *testLog) string {
		line := l.record("2026-09-17T08:00:00.000Z")
		l.files[day1] = line
		return l.write()
	}, day1, 1, "no newline at the end"},
	{"newline missing at the end of an older file", func(l *testLog) string {
		line := l.record("2026-09-17T08:00:00.000Z")
		l.files[day1] = line
		l.record("2026-09-18T08:00:00.000Z")
		return l.write()
	}, day1, 1, "no newline at the end of the file, yet a later file follows"},
	{"tampered argument", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.record("2026-09-17T09:00:00.000Z")
		l.files[day1] = bytes.Replace(l.files[day1], []byte("example.org"), []byte("example.com"), 1)
		return l.write()
	}, day1, 2, "prev"},
}

func hashOf(b []byte) wire.Hash32 { return sha256.Sum256(b) }

func TestVerifyRejects(t *testing.T) {
	for _, c := range badLogs {
		t.Run(c.name, func(t *testing.T) {
			_, err := Verify(c.build(newTestLog(t)))
			wantVerifyError(t, err, c.file, c.line, c.want)
			t.Log(err)
		})
	}
}

func TestVerifyRejectsSubdirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, day1), 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(dir)
	wantVerifyError(t, err, day1, 0, "not a regular file")
}

func TestVerifyMissingDirectory(t *testing.T) {
	_, err := Verify(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Verify of a missing directory: %v, want a not-exist error", err)
	}
}

// Each case builds a log that must verify, with this many records and torn lines.
var goodLogs = []struct {
	name           string
	build          func(l *testLog) string
	records, files int
	torn           int
}{
	{"empty directory", func(l *testLog) string { return l.write() }, 0, 0, 0},
	{"only the lock file", func(l *testLog) string {
		l.raw(lockName, nil)
		return l.write()
	}, 0, 0, 0},
	{"two torn lines described by one recovery (a crash while recovering)", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		partial := []byte(`{"seq":2,"time":"2026-09-17T11:0`)
		l.raw(day1, append(append(torn, '\n'), append(partial, '\n')...))
		l.recovery("2026-09-17T12:00:00.000Z", append(append(torn, '\n'), partial...))
		l.record("2026-09-17T13:00:00.000Z")
		return l.write()
	}, 3, 1, 2},
	{"two crashes, each recovered", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.recovery("2026-09-17T11:00:00.000Z", torn)
		l.raw(day1, []byte("{\"seq\":\n"))
		l.recovery("2026-09-17T12:00:00.000Z", []byte(`{"seq":`))
		return l.write()
	}, 3, 1, 2},
	{"torn line ends one day, its recovery starts the next", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(torn, '\n'))
		l.recovery("2026-09-18T06:00:00.000Z", torn)
		return l.write()
	}, 2, 2, 1},
	{"empty day file in the middle", func(l *testLog) string {
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day2, nil)
		l.record("2026-09-19T08:00:00.000Z")
		return l.write()
	}, 2, 3, 0},
	{"valid but not canonical JSON", func(l *testLog) string {
		line := l.record("2026-09-17T08:00:00.000Z")
		spaced := bytes.Replace(line, []byte(`"tool":`), []byte(`"tool": `), 1)
		l.files[day1] = append(spaced, '\n')
		l.head.hash = sha256.Sum256(spaced)
		l.record("2026-09-17T09:00:00.000Z")
		return l.write()
	}, 2, 1, 0},
}

func TestVerifyAccepts(t *testing.T) {
	for _, c := range goodLogs {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			res, err := Verify(c.build(l))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := Result{Records: uint64(c.records), Files: c.files, Torn: c.torn, Head: Head{Seq: l.head.seq, Hash: l.head.hash}}
			if res != want {
				t.Errorf("Verify = %+v, want %+v", res, want)
			}
		})
	}
}

func TestVerifyEmptyDirectorySays(t *testing.T) {
	res, err := Verify(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := "ok: 0 records in 0 files, head seq 0 " + strings.Repeat("0", 64)
	if res.String() != want {
		t.Errorf("got %q, want %q", res, want)
	}
}

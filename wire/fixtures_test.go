package wire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

const fixtures = "../fixtures"

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func globFixtures(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtures, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures match %s (%v)", pattern, err)
	}
	return files
}

func TestValidJSONRoundTrip(t *testing.T) {
	for _, file := range globFixtures(t, "wire/valid/*.json") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, _ := os.ReadFile(file)
			e, err := Decode(want)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got, err := Encode(e)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("re-encoded bytes differ\n got %s\nwant %s", got, want)
			}
		})
	}
}

// Every .frame beside a .json holds the same envelope, framed.
func TestValidFrames(t *testing.T) {
	frames := globFixtures(t, "wire/valid/*.frame")
	for _, file := range frames {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, _ := os.ReadFile(file)
			r := bytes.NewReader(raw)
			got, err := ReadEnvelope(r)
			if err != nil {
				t.Fatalf("ReadEnvelope: %v", err)
			}
			if r.Len() != 0 {
				t.Errorf("%d bytes left after the frame", r.Len())
			}
			jsonFile := strings.TrimSuffix(file, ".frame") + ".json"
			if body, err := os.ReadFile(jsonFile); err == nil {
				want, err := Decode(body)
				if err != nil {
					t.Fatalf("Decode %s: %v", jsonFile, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("frame decodes to %+v, json to %+v", got, want)
				}
			}
			var out bytes.Buffer
			if err := WriteEnvelope(&out, got); err != nil {
				t.Fatalf("WriteEnvelope: %v", err)
			}
			if !bytes.Equal(out.Bytes(), raw) {
				t.Errorf("re-framed bytes differ from the fixture")
			}
		})
	}
}

func TestMaxFrameAccepted(t *testing.T) {
	raw := readFixture(t, "wire/valid/max_frame.frame")
	body, err := ReadFrame(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	if len(body) != MaxFrame {
		t.Fatalf("body is %d bytes, want exactly MaxFrame (%d)", len(body), MaxFrame)
	}
	e, err := Decode(body)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if _, ok := e.Msg.(Result); !ok {
		t.Fatalf("max frame holds %T, want Result", e.Msg)
	}
	var out bytes.Buffer
	if err := WriteEnvelope(&out, e); err != nil || !bytes.Equal(out.Bytes(), raw) {
		t.Fatalf("max frame does not re-frame to the same bytes (err %v)", err)
	}
}

type invalidCase struct {
	File   string `toml:"file"`
	Expect string `toml:"expect"`
	Note   string `toml:"note"`
}

// loadInvalidCases reads every case table: the M1 cases.toml and the ones
// later kinds added beside it (*_cases.toml).
func loadInvalidCases(t *testing.T) []invalidCase {
	var all []invalidCase
	for _, file := range globFixtures(t, "wire/invalid/*cases.toml") {
		var table struct {
			Case []invalidCase `toml:"case"`
		}
		data, _ := os.ReadFile(file)
		dec := toml.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&table); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		all = append(all, table.Case...)
	}
	return all
}

// Every invalid frame gives the error its case names, and every file in the
// directory has a case.
func TestInvalidFrames(t *testing.T) {
	cases := loadInvalidCases(t)
	var listed []string
	for _, c := range cases {
		listed = append(listed, c.File)
		t.Run(c.File, func(t *testing.T) {
			raw := readFixture(t, filepath.Join("wire/invalid", c.File))
			_, err := ReadEnvelope(bytes.NewReader(raw))
			if got := outcome(err); got != c.Expect {
				t.Errorf("got %s (%v), want %s: %s", got, err, c.Expect, c.Note)
			}
		})
	}
	for _, file := range globFixtures(t, "wire/invalid/*.frame") {
		if !slices.Contains(listed, filepath.Base(file)) {
			t.Errorf("%s has no case in cases.toml", filepath.Base(file))
		}
	}
}

// outcome names an error the way cases.toml does.
func outcome(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated"
	case errors.Is(err, ErrBadFrame):
		return "bad_frame"
	default:
		return string(CodeOf(err))
	}
}

func TestLogFixturesRoundTrip(t *testing.T) {
	for _, file := range globFixtures(t, "log/*.json") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, _ := os.ReadFile(file)
			r, err := DecodeLogRecord(want)
			if err != nil {
				t.Fatalf("DecodeLogRecord: %v", err)
			}
			got, err := EncodeLogRecord(r)
			if err != nil {
				t.Fatalf("EncodeLogRecord: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("re-encoded bytes differ\n got %s\nwant %s", got, want)
			}
		})
	}
}

// The audit fixtures' complete lines are canonical records too; the torn
// line (no newline after it in torn-before, the short one in torn-after) is not.
func TestAuditFixtureLinesRoundTrip(t *testing.T) {
	// Day files only: fixtures/audit/checkpoints holds signed notes.
	for _, file := range globFixtures(t, "audit/*/????-??-??.jsonl") {
		data, _ := os.ReadFile(file)
		for i, line := range bytes.SplitAfter(data, []byte("\n")) {
			line, complete := bytes.CutSuffix(line, []byte("\n"))
			if !complete || bytes.HasSuffix(line, []byte(`"prev":"d334ae`)) {
				continue
			}
			e, err := DecodeAuditEntry(line)
			if err != nil {
				t.Errorf("%s:%d: %v", file, i+1, err)
				continue
			}
			got, err := EncodeAuditEntry(e)
			if err != nil || !bytes.Equal(got, line) {
				t.Errorf("%s:%d: re-encoded differs (err %v)\n got %s\nwant %s", file, i+1, err, got, line)
			}
		}
	}
}

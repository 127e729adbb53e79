package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allLines reads every line of the log's day files in order.
func allLines(t *testing.T, dir string) []string {
	t.Helper()
	files, err := listDayFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); s != "" {
			lines = append(lines, strings.Split(strings.TrimSuffix(s, "\n"), "\n")...)
		}
	}
	return lines
}

func TestTailFixtures(t *testing.T) {
	for _, dir := range []string{"chain", "torn-after"} {
		path := filepath.Join(fixtureDir, dir)
		all := allLines(t, path)
		for _, n := range []int{0, 1, 2, 3, 4, len(all), len(all) + 5} {
			got, err := Tail(path, n)
			if err != nil {
				t.Fatal(err)
			}
			if want := all[max(0, len(all)-n):]; !slices.Equal(got, want) {
				t.Errorf("Tail(%s, %d) = %q, want %q", dir, n, got, want)
			}
		}
	}
}

// Tail leaves out a last line with no newline: it is torn, or being written.
func TestTailSkipsUnfinishedLine(t *testing.T) {
	path := filepath.Join(fixtureDir, "torn-before")
	all := allLines(t, path)
	got, err := Tail(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := all[len(all)-3 : len(all)-1]; !slices.Equal(got, want) {
		t.Errorf("Tail = %q, want %q", got, want)
	}
}

// Tail reads backwards across block boundaries and across files.
func TestTailLongLog(t *testing.T) {
	l := newTestLog(t)
	for i := range 1500 {
		l.record(fmt.Sprintf("2026-09-%02dT%02d:%02d:00.000Z", 17+i/1000, i%1000/60, i%60))
	}
	dir := l.write()
	all := allLines(t, dir)
	for _, n := range []int{1, 499, 500, 501, 1200, 1500, 1600} {
		got, err := Tail(dir, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := all[max(0, len(all)-n):]; !slices.Equal(got, want) {
			t.Errorf("Tail(%d): %d lines, want %d", n, len(got), len(want))
		}
	}
}

func TestTailRefusesNegative(t *testing.T) {
	if _, err := Tail(t.TempDir(), -1); err == nil {
		t.Fatal("Tail(-1) succeeded")
	}
}

func TestReadHeadMatchesVerify(t *testing.T) {
	for _, dir := range []string{"chain", "torn-after"} {
		path := filepath.Join(fixtureDir, dir)
		res, err := Verify(path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ReadHead(path)
		if err != nil || h != res.Head {
			t.Errorf("ReadHead(%s) = %v, %v; want %v", dir, h, err, res.Head)
		}
	}
}

func TestReadHeadOfTornLogIsLastCompleteRecord(t *testing.T) {
	h, err := ReadHead(filepath.Join(fixtureDir, "torn-before"))
	if err != nil || h.Seq != 5 || h.Hash.String() != "d334ae511b974b4f69d6c9c8cbd466fcca6e37e3a25c299357a3c9d88c92aba7" {
		t.Errorf("ReadHead = %v, %v; want seq 5 d334ae…", h, err)
	}
}

func TestReadHeadEmptyLog(t *testing.T) {
	l := newTestLog(t)
	l.raw(day1, nil)
	h, err := ReadHead(l.write())
	if err != nil || h != (Head{}) {
		t.Errorf("ReadHead = %v, %v; want seq 0 and zeros", h, err)
	}
}

func TestReadHeadBadLastLine(t *testing.T) {
	l := newTestLog(t)
	l.record("2026-09-17T08:00:00.000Z")
	l.raw(day1, []byte("{\"seq\":\n"))
	if _, err := ReadHead(l.write()); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("ReadHead = %v, want a parse error", err)
	}
}

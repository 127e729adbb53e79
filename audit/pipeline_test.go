package audit

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// scanOutcome is everything a scan says, as text.
func scanOutcome(s *chainScan, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%s files %d torn %d open run %v (%d lines, %d bytes, %x) no newline %v",
		s.result(), s.files, s.torn, s.run.open, s.run.lines, s.run.n, s.runSumIfOpen(), s.noNewline)
}

func (s *chainScan) runSumIfOpen() []byte {
	if !s.run.open {
		return nil
	}
	sum := s.runSum()
	return sum[:]
}

// Verify and Open's repair scan say the same of every log, good or bad,
// however the files are cut into chunks and however many workers parse
// them: a line split across chunks, a chunk of one line, a torn run spread
// over several chunks, a bad line in a late chunk while early ones are
// still being parsed.
func TestScanAgreesAtAnyChunkSizeAndWorkers(t *testing.T) {
	dirs := map[string]string{}
	for _, c := range badLogs {
		dirs[c.name] = c.build(newTestLog(t))
	}
	for _, c := range goodLogs {
		dirs[c.name] = c.build(newTestLog(t))
	}
	for _, c := range loadFixtureCases(t) {
		dirs["fixture "+c.Dir] = filepath.Join(fixtureDir, c.Dir)
	}
	dirs["a long unterminated line at the end"] = func() string {
		l := newTestLog(t)
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, bytes.Repeat([]byte("y"), MaxLine+5))
		return l.write()
	}()
	dirs["a line of exactly MaxLine bytes"] = func() string {
		l := newTestLog(t)
		l.record("2026-09-17T08:00:00.000Z")
		l.raw(day1, append(bytes.Repeat([]byte("z"), MaxLine), '\n'))
		return l.write()
	}()
	dirs["many records over several files"] = func() string {
		l := newTestLog(t)
		for _, day := range []string{"17", "18", "19"} {
			for h := 10; h < 40; h++ {
				l.record(fmt.Sprintf("2026-09-%sT%02d:%02d:00.000Z", day, h/2, h%2*30))
			}
		}
		return l.write()
	}()
	for name, dir := range dirs {
		for _, repair := range []bool{false, true} {
			want := scanOutcome(scanDirWith(dir, repair, chunkBytes, 1))
			for _, target := range []int{1, 2, 50, 333, 4096} {
				for _, workers := range []int{1, 2, 5} {
					if got := scanOutcome(scanDirWith(dir, repair, target, workers)); got != want {
						t.Errorf("%s (repair %v), chunks of %d bytes, %d workers:\n%s\nwant\n%s", name, repair, target, workers, got, want)
					}
				}
			}
		}
	}
}

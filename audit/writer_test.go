package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// mustOpen opens dir with opts and closes the Writer when the test ends.
func mustOpen(t *testing.T, dir string, opts ...Option) *Writer {
	t.Helper()
	w, err := Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// readLog returns the day files of dir and their bytes, leaving out the lock.
func readLog(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		if e.Name() == lockName || e.Name() == TreeName { // the tree is derived, rebuilt on recovery
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func sameLog(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("files %v, want %v", keys(got), keys(want))
	}
	for name, w := range want {
		if g := got[name]; !bytes.Equal(g, w) {
			t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", name, g, w)
		}
	}
}

func keys(m map[string][]byte) (k []string) {
	for name := range m {
		k = append(k, name)
	}
	return k
}

// The writer turns torn-before into torn-after byte for byte: the torn line
// is kept and ended, the recovery record follows, and the next record chains
// from the recovery record.
func TestOpenRecoversTornFixture(t *testing.T) {
	dir := copyDir(t, filepath.Join(fixtureDir, "torn-before"))
	want := readLog(t, filepath.Join(fixtureDir, "torn-after"))
	now := fixedClock(t, "2026-09-18T09:05:00.000Z")
	clock := func() time.Time { return now() }
	w := mustOpen(t, dir, WithClock(func() time.Time { return clock() }))

	got := readLog(t, dir)
	wantDay2 := want[day2]
	upToRecovery := wantDay2[:bytes.LastIndexByte(wantDay2[:len(wantDay2)-1], '\n')+1]
	sameLog(t, got, map[string][]byte{day1: want[day1], day2: upToRecovery})
	if h := w.Head(); h.Seq != 6 {
		t.Errorf("Head after recovery = %v, want seq 6", h)
	}

	clock = fixedClock(t, "2026-09-18T09:06:00.000Z")
	rec := sampleRecord(t, 4)
	rec.Session = mustSession(t, "mm-abc")
	rec.Arguments = `{"url":"https://example.org/a"}`
	stored, err := w.Append(rec)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Seq != 7 || stored.Time != mustTime(t, "2026-09-18T09:06:00.000Z") {
		t.Errorf("stored seq %d time %s, want 7 at 09:06", stored.Seq, stored.Time)
	}
	sameLog(t, readLog(t, dir), want)
}

func TestOpenRefusesLogThatDoesNotVerify(t *testing.T) {
	for _, c := range []struct{ dir, file string }{{"tampered", day1}, {"deleted", day2}} {
		t.Run(c.dir, func(t *testing.T) {
			dir := copyDir(t, filepath.Join(fixtureDir, c.dir))
			before := readLog(t, dir)
			_, err := Open(dir)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.File != c.file || !strings.Contains(err.Error(), "refusing to append") {
				t.Fatalf("Open = %v, want a refusal naming %s", err, c.file)
			}
			sameLog(t, readLog(t, dir), before)
			// The failed Open released its lock.
			if _, err := Open(dir); errors.Is(err, ErrLocked) {
				t.Errorf("lock still held after a failed Open")
			}
		})
	}
}

func TestSecondWriterIsLockedOut(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir)
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, dir)
}

func TestOpenMissingDirectory(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open = %v, want a not-exist error", err)
	}
}

// steppingClock returns times from start, step apart, one per call.
func steppingClock(t testing.TB, start string, step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := mustTime(t, start).Time()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

func TestAppendChainsAcrossDays(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir, WithClock(steppingClock(t, "2026-09-17T10:00:00.000Z", 10*time.Hour)))
	var prev wire.Hash32
	for i := range 6 {
		r, err := w.Append(sampleRecord(t, wire.CallID(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != uint64(i+1) || r.Prev != prev {
			t.Fatalf("record %d: seq %d prev %s, want seq %d prev %s", i, r.Seq, r.Prev, i+1, prev)
		}
		line, _ := wire.EncodeAuditEntry(r)
		prev = hashOf(line)
	}
	res, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 20:00 on the 17th; 06:00 and 16:00 on the 18th; 02:00, 12:00 and 22:00 on the 19th.
	if res.Records != 6 || res.Files != 3 || res.Head != w.Head() || res.Head.Hash != prev {
		t.Errorf("Verify = %+v, writer head %v", res, w.Head())
	}
}

func TestTimeNeverGoesBackwards(t *testing.T) {
	dir := t.TempDir()
	times := []string{"2026-09-18T10:00:00.000Z", "2026-09-18T09:00:00.000Z", "2026-09-17T09:00:00.000Z"}
	i := 0
	w := mustOpen(t, dir, WithClock(func() time.Time { i++; return mustTime(t, times[i-1]).Time() }))
	for range times {
		r, err := w.Append(sampleRecord(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		if r.Time != mustTime(t, times[0]) {
			t.Errorf("seq %d at %s, want %s", r.Seq, r.Time, times[0])
		}
	}
	if _, err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

func TestAppendRefusesChainFields(t *testing.T) {
	w := mustOpen(t, t.TempDir())
	r := sampleRecord(t, 1)
	r.Seq = 9
	if _, err := w.Append(r); err == nil || !strings.Contains(err.Error(), "pass them as zero") {
		t.Fatalf("Append with a seq = %v, want a refusal", err)
	}
}

// A record that cannot be encoded fails alone: it takes no seq and the
// Writer goes on.
func TestInvalidRecordFailsAlone(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir)
	bad := sampleRecord(t, 1)
	bad.SessionTaint = 0
	if _, err := w.Append(bad); err == nil || !strings.Contains(err.Error(), "data class") {
		t.Fatalf("Append of an invalid record = %v, want an encoding error", err)
	}
	noDecision := sampleRecord(t, 1)
	noDecision.Decision = nil
	if _, err := w.Append(noDecision); err == nil || !strings.Contains(err.Error(), "no DecisionRecord") {
		t.Fatalf("Append without a decision = %v, want an encoding error", err)
	}
	badUTF8 := sampleRecord(t, 1)
	badUTF8.Arguments = "\xff"
	if _, err := w.Append(badUTF8); err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
		t.Fatalf("Append of invalid UTF-8 = %v, want an encoding error", err)
	}
	tooLong := sampleRecord(t, 2)
	tooLong.Arguments = strings.Repeat("a", MaxLine)
	if _, err := w.Append(tooLong); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("Append of a huge record = %v, want a refusal", err)
	}
	r, err := w.Append(sampleRecord(t, 3))
	if err != nil || r.Seq != 1 {
		t.Fatalf("Append after failures = seq %d, %v; want seq 1", r.Seq, err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	w := mustOpen(t, t.TempDir())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(sampleRecord(t, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestConcurrentAppendsKeepTheChain(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir)
	const n = 64
	seqs := make([]uint64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := w.Append(sampleRecord(t, wire.CallID(i)))
			if err != nil {
				t.Error(err)
			}
			seqs[i] = r.Seq
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, s := range seqs {
		if s < 1 || s > n || seen[s] {
			t.Errorf("seq %d given twice or out of range", s)
		}
		seen[s] = true
	}
	res, err := Verify(dir)
	if err != nil || res.Records != n {
		t.Fatalf("Verify = %+v, %v; want %d records", res, err, n)
	}
}

func TestOpenRefusesStrayFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "2026-09-17.jsonl.bak"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.File != "2026-09-17.jsonl.bak" {
		t.Fatalf("Open = %v, want a refusal naming the stray file", err)
	}
}

// A clock stepped back is logged once per episode: records keep the last
// time, and the log says so, again only after the clock caught up and fell
// behind once more.
func TestClockBehindIsLoggedOncePerEpisode(t *testing.T) {
	dir := t.TempDir()
	times := []string{
		"2026-09-18T10:00:00.000Z",
		"2026-09-18T09:00:00.000Z", // stepped back: logged
		"2026-09-18T09:00:01.000Z", // still behind: not again
		"2026-09-18T10:00:05.000Z", // caught up: the episode ends
		"2026-09-18T08:00:00.000Z", // back again: logged
	}
	i := 0
	var logs []string
	w := mustOpen(t, dir, WithClock(func() time.Time { i++; return mustTime(t, times[i-1]).Time() }),
		WithLog(func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }))
	for range times {
		if _, err := w.Append(sampleRecord(t, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if len(logs) != 2 || !strings.Contains(logs[0], "2026-09-18T09:00:00.000Z") || !strings.Contains(logs[0], "behind") ||
		!strings.Contains(logs[1], "2026-09-18T08:00:00.000Z") || !strings.Contains(logs[1], "10:00:05") {
		t.Fatalf("logged %d times, want 2, one per episode:\n%s", len(logs), strings.Join(logs, "\n"))
	}
}

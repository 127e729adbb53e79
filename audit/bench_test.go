package audit

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/wire"
)

// BenchmarkAppend measures durable appends (write and fsync before each
// Append returns) from 1, 8 and 64 goroutines at once; group commit is what
// makes the larger counts faster per record.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			w, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			rec := sampleRecord(b, 1)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range writers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := w.Append(rec); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkAppendScaling is group commit's gain: records a second from 64
// goroutines appending at once against one goroutine alone. Rounds of each
// take turns in the same run, so that both see the same disk and the same
// neighbours; the figures are the medians over the rounds. Issue 15 asks for
// at least 20 times.
func BenchmarkAppendScaling(b *testing.B) {
	one, many := openBench(b), openBench(b)
	rec := sampleRecord(b, 1)
	const each1, each64 = 20, 10
	var r1, r64, ratio []float64
	for b.Loop() {
		a := each1 / appendRound(b, one, rec, 1, each1).Seconds()
		z := 64 * each64 / appendRound(b, many, rec, 64, each64).Seconds()
		r1, r64, ratio = append(r1, a), append(r64, z), append(ratio, z/a)
	}
	b.ReportMetric(median(r64), "records/s")
	b.ReportMetric(median(r1), "ref-records/s")
	b.ReportMetric(median(ratio), "x-vs-ref")
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func openBench(b *testing.B) *Writer {
	w, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	return w
}

// appendRound has writers goroutines append each records of rec to w at
// once and returns how long they took.
func appendRound(b *testing.B, w *Writer, rec wire.AuditRecord, writers, each int) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := w.Append(rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkVerify measures Verify over a generated log of AUDIT_BENCH_MB
// megabytes (16 unless set; `make bench` uses 200) against `openssl dgst
// -sha256` over the same files, which reads and hashes the same bytes on one
// core without checking anything. Each round runs both, so that both see the
// same machine; the figures are medians. Issue 15 asks Verify, spread over
// the cores, for at least 1.5 times openssl's rate on two cores. sha256sum
// is reported too, as before.
func BenchmarkVerify(b *testing.B) {
	mb := 16
	if s := os.Getenv("AUDIT_BENCH_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil || mb <= 0 {
			b.Fatalf("AUDIT_BENCH_MB=%q is not a positive number", s)
		}
	}
	dir, size := benchLog(b, int64(mb)<<20)
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		b.Logf("no openssl to compare with: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	var verify, ref []float64
	for b.Loop() {
		start := time.Now()
		if _, err := Verify(dir); err != nil {
			b.Fatal(err)
		}
		verify = append(verify, float64(size)/time.Since(start).Seconds()/1e6)
		if openssl != "" {
			ref = append(ref, commandRate(b, size, openssl, append([]string{"dgst", "-sha256"}, files...)...))
		}
	}
	b.ReportMetric(median(verify), "verify-MB/s")
	b.ReportMetric(hashOnlyRate(b, dir, size), "hash-only-MB/s")
	if rate, ok := sha256sumRate(b, dir, size); ok {
		b.ReportMetric(rate, "sha256sum-MB/s")
		b.ReportMetric(median(verify)/rate, "verify/sha256sum")
	}
	if len(ref) > 0 {
		b.ReportMetric(median(ref), "openssl-MB/s")
		b.ReportMetric(median(verify)/median(ref), "x-vs-ref")
	}
}

// commandRate runs a command that reads size bytes and returns its rate in MB/s.
func commandRate(b *testing.B, size int64, name string, args ...string) float64 {
	start := time.Now()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", name, err, out)
	}
	return float64(size) / time.Since(start).Seconds() / 1e6
}

// BenchmarkParseLine compares the canonical fast path with wire's decoder
// on one typical line: the reason the fast path exists.
func BenchmarkParseLine(b *testing.B) {
	line, err := wire.EncodeAuditEntry(benchRecord(b, rand.New(rand.NewPCG(5, 6)), 1, 0, wire.Hash32{}))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		parse func([]byte) (entry, error)
	}{{"canonical", parseEntry}, {"wire", decodeStrict}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.parse(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchLog writes a chained log of about size bytes, 20000 records a day,
// and returns its directory and exact size.
func benchLog(b *testing.B, size int64) (string, int64) {
	b.Helper()
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(7, 8))
	start := mustTime(b, "2026-01-01T00:00:00.000Z")
	var written int64
	var head chainHead
	var f *os.File
	var bw *bufio.Writer
	for seq := uint64(1); written < size; seq++ {
		ts := start + wire.Timestamp(seq*(msPerDay/20000))
		if f == nil || dayOf(ts) != dayOf(head.time) {
			if f != nil {
				closeBench(b, f, bw)
			}
			var err error
			if f, err = os.Create(filepath.Join(dir, dayName(dayOf(ts)))); err != nil {
				b.Fatal(err)
			}
			bw = bufio.NewWriterSize(f, 1<<20)
		}
		line, err := wire.EncodeAuditEntry(benchRecord(b, r, seq, ts, head.hash))
		if err != nil {
			b.Fatal(err)
		}
		bw.Write(line)
		bw.WriteByte('\n')
		written += int64(len(line)) + 1
		head = chainHead{seq: seq, hash: hashOf(line), time: ts}
	}
	closeBench(b, f, bw)
	return dir, written
}

func closeBench(b *testing.B, f *os.File, bw *bufio.Writer) {
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchRecord is a plausible decision: mostly fetches and notes, some shell
// commands with quotes and newlines, some non-ASCII, arguments of 30 to
// about 1000 bytes.
func benchRecord(b *testing.B, r *rand.Rand, seq uint64, ts wire.Timestamp, prev wire.Hash32) wire.AuditRecord {
	grant := "fetch-docs"
	var args string
	switch r.IntN(4) {
	case 0:
		args = `{"url":"https://example.org/` + strings.Repeat("docs/page-", 1+r.IntN(20)) + `"}`
	case 1:
		args = `{"path":"notes/` + strings.Repeat("café ", 1+r.IntN(10)) + `.md"}`
	case 2:
		args = `{"command":"grep -rn \"TODO\" src/\nwc -l *.go` + strings.Repeat(" && echo ok", r.IntN(40)) + `"}`
	default:
		args = `{"prompt":"` + strings.Repeat("summarise the thread, <politely> & briefly. ", 1+r.IntN(20)) + `"}`
	}
	var d wire.DecisionRecord = wire.DecisionAllowed{Grant: grant}
	if r.IntN(3) == 0 {
		d = wire.DecisionDenied{Reason: wire.TaintTooHigh, Grant: &grant}
	}
	return wire.AuditRecord{
		Seq: seq, Time: ts, Prev: prev,
		Session: mustSession(b, "chat-"+strconv.Itoa(r.IntN(50))), Call: wire.CallID(seq),
		Tool: "http_fetch", Arguments: args, SessionTaint: wire.Private, Decision: d,
	}
}

// hashOnlyRate times reading the log's lines as Verify does and hashing
// them, checking nothing: the most Verify could reach, best of three, in MB/s.
func hashOnlyRate(b *testing.B, dir string, size int64) float64 {
	files, err := listDayFiles(dir)
	if err != nil {
		b.Fatal(err)
	}
	rd := bufio.NewReaderSize(nil, MaxLine+1)
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		for _, f := range files {
			fh, err := os.Open(filepath.Join(dir, f.name))
			if err != nil {
				b.Fatal(err)
			}
			rd.Reset(fh)
			for {
				line, err := rd.ReadSlice('\n')
				if err != nil {
					break
				}
				hashOf(line[:len(line)-1])
			}
			fh.Close()
		}
		best = min(best, time.Since(start))
	}
	return float64(size) / best.Seconds() / 1e6
}

// sha256sumRate times `sha256sum` over the log's files, best of three, in MB/s.
func sha256sumRate(b *testing.B, dir string, size int64) (float64, bool) {
	path, err := exec.LookPath("sha256sum")
	if err != nil {
		b.Logf("no sha256sum to compare with: %v", err)
		return 0, false
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		if out, err := exec.Command(path, files...).CombinedOutput(); err != nil {
			b.Fatalf("sha256sum: %v: %s", err, out)
		}
		best = min(best, time.Since(start))
	}
	return float64(size) / best.Seconds() / 1e6, true
}

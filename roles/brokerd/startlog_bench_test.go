package brokerd

import (
	"bufio"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// BenchmarkStartWithLargeLog is brokerd's start to ready (both its sockets
// answer), the real binary, on a home whose audit log holds AUDIT_BENCH_MB
// of records (16 unless set; 520 is about 1,000,000 records) and a
// checkpoint of its head, against a home with an empty log, in turns.
// Issue 16 asks for at most 2 times.
func BenchmarkStartWithLargeLog(b *testing.B) {
	mb := int64(16)
	if s := os.Getenv("AUDIT_BENCH_MB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("AUDIT_BENCH_MB=%q is not a positive number", s)
		}
		mb = n
	}
	big := newHome(b, "", nil)
	records := writeLargeLog(b, filepath.Join(big.dir, "audit"), mb<<20)
	big.start() // the first start verifies the log in full, once, and checkpoints it
	big.stopCleanly()
	empty := newHome(b, "", nil)
	var withLog, without []float64
	for b.Loop() {
		withLog = append(withLog, big.timedStart().Seconds())
		big.stopCleanly()
		without = append(without, empty.timedStart().Seconds())
		empty.stopCleanly()
	}
	bm, em := medianOf(withLog), medianOf(without)
	b.ReportMetric(float64(records), "records")
	b.ReportMetric(bm*1e3, "ms-start")
	b.ReportMetric(em*1e3, "ref-ms-start")
	b.ReportMetric(bm/em, "x-vs-ref")
}

// timedStart runs brokerd and returns how long it took until both sockets
// answered, looking every millisecond.
func (h *home) timedStart() time.Duration {
	h.t.Helper()
	h.log = &syncbuf.Buffer{}
	h.proc = exec.Command(boxmakerBinary(h.t), "brokerd", "--home", h.dir)
	h.proc.Stdout, h.proc.Stderr = h.log, h.log
	h.proc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := h.proc.Start(); err != nil {
		h.t.Fatal(err)
	}
	for _, client := range []string{"loopd", "bxctl"} {
		for {
			c, err := sock.Dial(h.socket(client))
			if err == nil {
				c.Close()
				break
			}
			if time.Since(start) > time.Minute {
				h.t.Fatalf("brokerd did not start: %v\n%s", err, h.log)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return time.Since(start)
}

func medianOf(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// writeLargeLog writes a valid chain of about size bytes of denied
// decisions into dir, one day file per 20,000 records, from 2026-01-01 on,
// and returns how many records it holds.
func writeLargeLog(b *testing.B, dir string, size int64) uint64 {
	b.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	session, _ := wire.ParseSessionID("bench-1")
	var f *os.File
	var w *bufio.Writer
	var prev wire.Hash32
	var written int64
	seq := uint64(0)
	day := ""
	for written < size {
		seq++
		at := start.Add(time.Duration(seq) * (24 * time.Hour / 20000))
		ts, _ := wire.TimestampOf(at)
		if name := at.Format("2006-01-02") + ".jsonl"; name != day {
			if f != nil {
				flushClose(b, f, w)
			}
			var err error
			if f, err = os.Create(filepath.Join(dir, name)); err != nil {
				b.Fatal(err)
			}
			w, day = bufio.NewWriterSize(f, 1<<20), name
		}
		line, err := wire.EncodeAuditEntry(wire.AuditRecord{Seq: seq, Time: ts, Prev: prev, Session: session, Call: wire.CallID(seq),
			Tool: "shell", Arguments: `{"command":"grep -rn TODO src/` + strings.Repeat(" && echo ok", int(seq%40)) + `"}`,
			SessionTaint: wire.Private, Decision: wire.DecisionDenied{Reason: wire.NoGrant}})
		if err != nil {
			b.Fatal(err)
		}
		w.Write(line)
		w.WriteByte('\n')
		written += int64(len(line)) + 1
		prev = sha256.Sum256(line)
	}
	flushClose(b, f, w)
	return seq
}

func flushClose(b *testing.B, f *os.File, w *bufio.Writer) {
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

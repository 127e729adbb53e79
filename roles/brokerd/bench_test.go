package brokerd

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// startBench starts brokerd with one auto grant for echo.
func startBench(b *testing.B) *home {
	h := newHome(b, "", map[string]string{"echo": echoGrant})
	h.start()
	return h
}

// latencies runs call n times and reports p50 and p99 in microseconds.
func latencies(b *testing.B, call func() error) {
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
}

func dialLoopd(b *testing.B, h *home) *sock.Client {
	c, err := sock.Dial(h.socket("loopd"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func expect[T wire.Message](c *sock.Client, s wire.SessionID, args string) error {
	res, err := c.Call(context.Background(), wire.ToolRequest{Session: s, Call: 1, Tool: "shell", Arguments: args}, nil)
	if err != nil {
		return err
	}
	if _, ok := res.(T); !ok {
		return fmt.Errorf("got %#v", res)
	}
	return nil
}

// BenchmarkDeniedCall is a call no grant allows: decided, audited (with
// its fsync) and answered.
func BenchmarkDeniedCall(b *testing.B) {
	h := startBench(b)
	c := dialLoopd(b, h)
	s, _ := wire.ParseSessionID("bench")
	latencies(b, func() error { return expect[wire.Denied](c, s, `{"command":"rm -rf /"}`) })
}

// BenchmarkAutoCall runs a trivial shell tool through a fresh sandbox.
func BenchmarkAutoCall(b *testing.B) {
	h := startBench(b)
	c := dialLoopd(b, h)
	s, _ := wire.ParseSessionID("bench")
	latencies(b, func() error { return expect[wire.Result](c, s, `{"command":"echo hi"}`) })
}

// BenchmarkBwrapTrue is the floor under BenchmarkAutoCall: bubblewrap with
// the same namespaces running true, measured in the same run.
func BenchmarkBwrapTrue(b *testing.B) {
	requireSandbox(b)
	args := []string{"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"}
	latencies(b, func() error { return exec.Command("/usr/bin/bwrap", args...).Run() })
}

// BenchmarkSessions16 is calls per second with 16 sessions calling at once,
// under a limit on sandboxes that lets them all run.
func BenchmarkSessions16(b *testing.B) {
	const sessions = 16
	h := newHome(b, fmt.Sprintf("[broker]\nmax_sandboxes = %d\n", sessions), map[string]string{"echo": echoGrant})
	h.start()
	var wg sync.WaitGroup
	start := time.Now()
	perSession := max(b.N/sessions, 1)
	errs := make(chan error, sessions)
	for i := range sessions {
		s, _ := wire.ParseSessionID(fmt.Sprintf("bench-%d", i))
		c := dialLoopd(b, h)
		wg.Go(func() {
			for range perSession {
				if err := expect[wire.Result](c, s, `{"command":"echo hi"}`); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(perSession*sessions)/time.Since(start).Seconds(), "calls/s")
}

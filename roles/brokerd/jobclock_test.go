package brokerd

import (
	"boxmaker/fixtures/poll"
	"bytes"
	"context"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The job tests run brokerd in-process through Run, so that its clock is
// the test's: a job due every minute comes due when the test says.

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// inProcess is brokerd running in the test's process, on h's home.
type inProcess struct {
	h     *home
	clock *fakeClock
	stop  func()
}

// startInProcess runs brokerd with clock until the test ends or stop.
func startInProcess(h *home, clock *fakeClock) *inProcess {
	h.t.Helper()
	paths, err := config.Resolve(h.dir, "")
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, Options{Paths: paths, Clock: clock.Now, Executable: boxmakerBinary(h.t), Log: log.New(h.log, "brokerd: ", 0)})
	}()
	var once sync.Once
	p := &inProcess{h: h, clock: clock}
	p.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("brokerd: %v", err)
			}
		})
	}
	h.t.Cleanup(p.stop)
	for _, client := range []string{"loopd", "bxctl"} {
		poll.Within(h.t, 15*time.Second, "brokerd to serve "+client+"'s socket", func() bool {
			c, err := sock.Dial(h.socket(client))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	return p
}

func (p *inProcess) restart() *inProcess {
	p.stop()
	return startInProcess(p.h, p.clock)
}

// ask sends m as client and fails the test on a transport error.
func (h *home) ask(client string, m wire.Message) wire.Message {
	h.t.Helper()
	res, _, err := h.call(client, m)
	if err != nil {
		h.t.Fatalf("%s: %v\n%s", wire.KindOf(m), err, h.log)
	}
	return res
}

// auditRecords reads every audit record of the home.
func (h *home) auditRecords() []wire.AuditRecord {
	h.t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "????-??-??.jsonl")) // the day files, not checkpoints.jsonl
	var out []wire.AuditRecord
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			e, err := wire.DecodeAuditEntry(line)
			if err != nil {
				h.t.Fatalf("%s: %v", f, err)
			}
			if r, ok := e.(wire.AuditRecord); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

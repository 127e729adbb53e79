package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/wire"
)

// The soak (make soak): thousands of turns with tool calls over hundreds of
// sessions, many at a time, against the whole stack under up. It prints the
// open descriptors and resident memory of every role after a warm-up and at
// the end, and fails when any grew by more than a tenth: a role that leaks
// per session or per turn fails here long before an owner's ninetieth day.
// It runs only when BOXMAKER_SOAK is set; it takes minutes.

const (
	soakTurns    = 5000
	soakSessions = 500
	soakWorkers  = 64
	soakWarmup   = 1000 // turns before the baseline is taken
)

func TestSoak(t *testing.T) {
	if os.Getenv("BOXMAKER_SOAK") == "" {
		t.Skip("skipping: the soak runs with make soak (BOXMAKER_SOAK=1)")
	}
	s := startStack(t, nil)
	roles := []string{"inferproxy", "loopd", "brokerd", "egressd"}
	sock := filepath.Join(s.home, "run", "bxctl-loopd", "loop.sock")
	var done, failed atomic.Int64
	var baseline map[string]usage
	var once sync.Once
	sessions := make([]*wire.SessionID, soakSessions)
	var mu sync.Mutex
	turns := make(chan int, soakTurns)
	for i := range soakTurns {
		turns <- i
	}
	close(turns)
	start := time.Now()
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Go(func() {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Errorf("dial loopd: %v", err)
				return
			}
			defer c.Close()
			for i := range turns {
				slot := i % soakSessions
				mu.Lock()
				id := sessions[slot]
				mu.Unlock()
				msg := "hello"
				if i%2 == 1 {
					msg = "read note welcome.md"
				}
				got, err := soakTurn(c, uint64(i+1), id, msg)
				if err != nil {
					failed.Add(1)
					t.Errorf("turn %d: %v", i, err)
					return
				}
				if id == nil {
					mu.Lock()
					if sessions[slot] == nil {
						sessions[slot] = &got
					}
					mu.Unlock()
				}
				if done.Add(1) == soakWarmup {
					once.Do(func() { baseline = measure(t, s, roles) })
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 || baseline == nil {
		t.Fatalf("%d turns failed, %d done", failed.Load(), done.Load())
	}
	end := measure(t, s, roles)
	t.Logf("%d turns over %d sessions, %d at a time, in %v", done.Load(), soakSessions, soakWorkers, time.Since(start).Round(time.Second))
	for _, r := range roles {
		b, e := baseline[r], end[r]
		t.Logf("%-10s fds %4d -> %4d   rss %6d -> %6d KiB", r, b.fds, e.fds, b.rssKiB, e.rssKiB)
		if grew(b.fds, e.fds, 4) || grew(b.rssKiB, e.rssKiB, 4096) {
			t.Errorf("%s grew by more than a tenth after the warm-up", r)
		}
	}
}

// soakTurn sends one message on c and reads the turn to its end.
func soakTurn(c net.Conn, id uint64, session *wire.SessionID, content string) (wire.SessionID, error) {
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	if err := wire.WriteEnvelope(c, wire.Envelope{ID: id, Final: true, Msg: wire.ChatSend{Session: session, Content: content}}); err != nil {
		return wire.SessionID{}, err
	}
	for {
		e, err := wire.ReadEnvelope(c)
		if err != nil {
			return wire.SessionID{}, err
		}
		switch m := e.Msg.(type) {
		case wire.ChatDone:
			return m.Session, nil
		case wire.WireError:
			return wire.SessionID{}, fmt.Errorf("%s: %s", m.Code, m.Detail)
		}
		if e.Final {
			return wire.SessionID{}, fmt.Errorf("the turn ended with %s", wire.KindOf(e.Msg))
		}
	}
}

type usage struct{ fds, rssKiB int }

// measure reads each role's open descriptors and resident memory.
func measure(t *testing.T, s *stack, roles []string) map[string]usage {
	out := map[string]usage{}
	for _, r := range roles {
		pid := s.pidOf(r)
		if pid == 0 {
			t.Fatalf("%s is not running\n%s", r, s.log)
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		u := usage{fds: len(fds)}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				u.rssKiB, _ = strconv.Atoi(strings.Fields(rest)[0])
			}
		}
		out[r] = u
	}
	return out
}

// grew reports whether after is more than a tenth above before, beyond a
// small absolute slack (a descriptor or a few pages come and go).
func grew(before, after, slack int) bool {
	return after > before+before/10+slack
}

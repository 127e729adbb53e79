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

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/roles"
	"boxmaker/wire"
)

// The soak (make soak): thousands of turns with tool calls over hundreds of
// sessions, many at a time, against the whole stack under up. It prints the
// open descriptors and resident memory of every role after a warm-up and at
// the end, and fails when any grew by more than a tenth: a role that leaks
// per session or per turn fails here long before an owner's ninetieth day.
// It runs only when BOXMAKER_SOAK is set; it takes about six minutes, four
// and a half of them waiting for idle roles to collect.
//
// Both figures are taken at a quiet moment: the warm-up is a batch of its
// own, and after each batch the soak waits until every role is idle and
// has collected its garbage (quietUsage). A baseline taken while 64 turns
// run counts their connections, sandboxes and buffers, and would hide a
// leak of that size.

const (
	soakTurns    = 5000
	soakSessions = 500
	soakWorkers  = 64
	// Sessions live a generation at a time, each for its turnsPerSession
	// turns, so that every batch of turns after the warm-up meets
	// conversations of the same lengths as the warm-up did. With every
	// session alive from the start, the last turns carried five times the
	// prompt of the first, and a role that keeps the latest prompts (the
	// scripted model's slot) grew with them, not with time.
	soakGeneration  = 100 // sessions alive at a time
	turnsPerSession = soakTurns / soakSessions
	soakWarmup      = soakGeneration * turnsPerSession // the first generation
)

func TestSoak(t *testing.T) {
	if os.Getenv("BOXMAKER_SOAK") == "" {
		require.Elsewhere(t, "the soak runs with make soak (BOXMAKER_SOAK=1)")
	}
	s := startStack(t, nil)
	daemons := soakDaemons()
	run := &soakRun{sock: filepath.Join(s.home, "run", "bxctl-loopd", "loop.sock"), sessions: make([]*wire.SessionID, soakSessions)}
	start := time.Now()
	run.batch(t, 0, soakWarmup)
	baseline := quietUsage(t, s, daemons)
	run.batch(t, soakWarmup, soakTurns)
	end := quietUsage(t, s, daemons)
	t.Logf("%d turns over %d sessions, %d at a time, in %v (%d of them warm-up)", run.done.Load(), soakSessions, soakWorkers, time.Since(start).Round(time.Second), soakWarmup)
	for _, r := range daemons {
		b, e := baseline[r], end[r]
		t.Logf("%-10s fds %4d -> %4d   rss %6d -> %6d KiB", r, b.fds, e.fds, b.rssKiB, e.rssKiB)
		if grew(b.fds, e.fds, 4) || grew(b.rssKiB, e.rssKiB, 4096) {
			t.Errorf("%s grew by more than a tenth after the warm-up", r)
		}
	}
}

// soakDaemons is every daemon of the role table the soak's stack runs:
// all but those that need a config table it does not have ([gateway]).
func soakDaemons() []string {
	var names []string
	for _, r := range roles.Table {
		if r.Daemon && r.Needs == "" {
			names = append(names, r.Name)
		}
	}
	return names
}

// soakRun is the soak's turns and the sessions they made.
type soakRun struct {
	sock     string
	mu       sync.Mutex
	sessions []*wire.SessionID        // a turn's slot, once its first turn made it
	inTurn   [soakSessions]sync.Mutex // one turn at a time in a session
	done     atomic.Int64
}

// batch runs turns from up to to, soakWorkers at a time, each worker on
// its own connection, and returns when all have ended; the test fails if
// any did not end well.
func (r *soakRun) batch(t *testing.T, from, to int) {
	turns := make(chan int, to-from)
	for i := from; i < to; i++ {
		turns <- i
	}
	close(turns)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Go(func() {
			c, err := net.Dial("unix", r.sock)
			if err != nil {
				t.Errorf("dial loopd: %v", err)
				failed.Add(1)
				return
			}
			defer c.Close()
			for i := range turns {
				if err := r.turn(c, i); err != nil {
					failed.Add(1)
					t.Errorf("turn %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d turns failed, %d done", failed.Load(), r.done.Load())
	}
}

// turn runs turn i in its session (every second one of a session reads a
// note), starting the session if it is the slot's first turn. A
// generation's sessions take turns in rounds, so a session's turns are a
// round apart.
func (r *soakRun) turn(c net.Conn, i int) error {
	gen, j := i/soakWarmup, i%soakWarmup
	slot, nth := gen*soakGeneration+j%soakGeneration, j/soakGeneration
	r.inTurn[slot].Lock()
	defer r.inTurn[slot].Unlock()
	r.mu.Lock()
	id := r.sessions[slot]
	r.mu.Unlock()
	msg := "hello"
	if nth%2 == 1 {
		msg = "read note welcome.md"
	}
	got, err := soakTurn(c, uint64(i+1), id, msg)
	if err != nil {
		return err
	}
	if id == nil {
		r.mu.Lock()
		if r.sessions[slot] == nil {
			r.sessions[slot] = &got
		}
		r.mu.Unlock()
	}
	r.done.Add(1)
	return nil
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

// quietUsage waits until every role is idle and its garbage collected,
// then measures each. Idle is a second in which no role used a tick of CPU
// time (10 ms) or opened or closed a descriptor; idle roles still run
// timers, which use far less. Collected: a Go process keeps the heap it
// grew under load until its next collection, which an idle one runs only
// after two minutes (the runtime's forced period), and RSS taken before it
// varied by a quarter between runs of the same soak. So after the roles
// went idle the soak waits out that period, then until every RSS has held
// still for two seconds (the scavenger has returned the freed pages).
func quietUsage(t *testing.T, s *stack, roles []string) map[string]usage {
	t.Helper()
	pids := map[string]int{}
	for _, r := range roles {
		if pids[r] = s.pidOf(r); pids[r] == 0 {
			t.Fatalf("%s is not running\n%s", r, s.log)
		}
	}
	idle := awaitStill(t, pids, time.Second, false)
	t.Logf("the roles are idle; waiting %v for their idle collection", idleCollection)
	poll.Within(t, idleCollection+time.Minute, "the idle collection", func() bool { return time.Since(idle) >= idleCollection })
	awaitStill(t, pids, 2*time.Second, true)
	out := map[string]usage{}
	for r, pid := range pids {
		out[r] = usage{fds: fdCount(pid), rssKiB: rssKiB(pid)}
	}
	return out
}

// idleCollection is how long an idle Go process waits before it collects
// its garbage (forcegcperiod, two minutes), and a little more.
const idleCollection = 2*time.Minute + 10*time.Second

// awaitStill waits until, for span, no role used more than a tick of CPU
// time or changed its descriptor count (nor, with rss, its resident
// memory), and returns when that span began.
func awaitStill(t *testing.T, pids map[string]int, span time.Duration, rss bool) time.Time {
	t.Helper()
	sample := func() map[string][3]int {
		m := map[string][3]int{}
		for r, pid := range pids {
			m[r] = [3]int{cpuTicks(t, pid), fdCount(pid)}
			if rss {
				m[r] = [3]int{m[r][0], m[r][1], rssKiB(pid)}
			}
		}
		return m
	}
	last, since := sample(), time.Now()
	poll.Within(t, time.Minute, fmt.Sprintf("every role to hold still for %v", span), func() bool {
		now := sample()
		for r := range pids {
			if now[r][1] != last[r][1] || now[r][2] != last[r][2] || now[r][0] > last[r][0]+1 {
				last, since = now, time.Now()
				return false
			}
		}
		return time.Since(since) >= span
	})
	return since
}

func fdCount(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}

// rssKiB is pid's resident memory (VmRSS).
func rssKiB(pid int) int {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.Fields(rest)[0])
			return kib
		}
	}
	return 0
}

// cpuTicks is the user and system CPU time pid has used, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}

// grew reports whether after is more than a tenth above before, beyond a
// small absolute slack (a descriptor or a few pages come and go).
func grew(before, after, slack int) bool {
	return after > before+before/10+slack
}

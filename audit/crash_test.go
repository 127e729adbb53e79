package audit

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// The kill test runs a child process (this test binary again, selected by
// these variables) that appends as fast as it can and reports every
// acknowledged record on file descriptor 3, until the parent SIGKILLs it.
const (
	crashDirEnv   = "AUDIT_CRASH_HELPER_DIR"
	crashRoundEnv = "AUDIT_CRASH_HELPER_ROUND"
	crashWriters  = 32
)

// TestCrashHelper is the child of TestKillDuringAppends, not a test.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestKillDuringAppends")
	}
	round, _ := strconv.ParseUint(os.Getenv(crashRoundEnv), 10, 32)
	acks := os.NewFile(3, "acks")
	w, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(acks, "ready")
	var mu sync.Mutex
	for g := range crashWriters {
		go func() {
			for i := uint64(0); ; i++ {
				call := wire.CallID(round<<40 | uint64(g)<<32 | i)
				rec := sampleRecord(t, call)
				// Large records make large batches, which a kill can cut
				// short at a page boundary: a torn line to recover.
				rec.Arguments = strings.Repeat("x", int(i%4)*3000)
				r, err := w.Append(rec)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(acks, "%d %d\n", r.Seq, r.Call) // unbuffered: one write per ack
				mu.Unlock()
			}
		}()
	}
	select {} // until killed
}

// TestKillDuringAppends kills a busy writer at random moments, reopens the
// log (running recovery), verifies it and checks that every record the
// child was told was written is there.
func TestKillDuringAppends(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	const rounds, roundsPerDir = 48, 8
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	var dir string
	var acked, torn int
	for round := range rounds {
		if round%roundsPerDir == 0 {
			dir = t.TempDir()
		}
		acks := runAndKill(t, dir, round, time.Duration(rng.IntN(40))*time.Millisecond)
		w, err := Open(dir)
		if err != nil {
			t.Fatalf("round %d: reopening after the kill: %v", round, err)
		}
		w.Close()
		res, err := Verify(dir)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		checkAcked(t, dir, acks)
		acked += len(acks)
		if round%roundsPerDir == roundsPerDir-1 {
			torn += res.Torn
		}
	}
	t.Logf("%d rounds, %d acknowledged records, %d torn lines recovered", rounds, acked, torn)
}

// runAndKill starts the child, lets it append for about d after it is ready,
// SIGKILLs it and returns the acknowledgements it sent: seq to call.
func runAndKill(t *testing.T, dir string, round int, d time.Duration) map[uint64]wire.CallID {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
	cmd.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := bufio.NewScanner(r)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Wait()
		t.Fatalf("round %d: the child did not start: %s", round, stderr.String())
	}
	done := make(chan map[uint64]wire.CallID)
	go func() { done <- readAcks(t, lines) }()
	time.Sleep(d)
	cmd.Process.Kill()
	cmd.Wait()
	acks := <-done // the pipe ends once the child is gone
	if stderr.Len() > 0 {
		t.Fatalf("round %d: the child failed: %s", round, stderr.String())
	}
	return acks
}

func readAcks(t *testing.T, lines *bufio.Scanner) map[uint64]wire.CallID {
	acks := map[uint64]wire.CallID{}
	for lines.Scan() {
		var seq uint64
		var call wire.CallID
		if _, err := fmt.Sscan(lines.Text(), &seq, &call); err != nil {
			t.Errorf("ack %q: %v", lines.Text(), err)
			continue
		}
		acks[seq] = call
	}
	if err := lines.Err(); err != nil && err != io.EOF {
		t.Error(err)
	}
	return acks
}

// checkAcked checks that each acknowledged seq holds the record that was
// acknowledged, not a recovery record or another record.
func checkAcked(t *testing.T, dir string, acks map[uint64]wire.CallID) {
	t.Helper()
	stored := map[uint64]wire.CallID{}
	for _, line := range allLines(t, dir) {
		if e, err := wire.DecodeAuditEntry([]byte(line)); err == nil {
			if r, ok := e.(wire.AuditRecord); ok {
				stored[r.Seq] = r.Call
			}
		}
	}
	for seq, call := range acks {
		if got, ok := stored[seq]; !ok || got != call {
			t.Errorf("acknowledged seq %d (call %d) is not in the log (found call %d, %v)", seq, call, got, ok)
		}
	}
}

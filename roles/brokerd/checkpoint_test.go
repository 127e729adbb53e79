package brokerd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// deniedCalls makes n calls that no grant allows: each is one audit record.
func (h *home) deniedCalls(n int) {
	h.t.Helper()
	for range n {
		if got := h.toolCall("s1", "shell", `{"command":"true"}`); got != (wire.Denied{Reason: wire.NoGrant}) {
			h.t.Fatalf("got %#v, want a denial", got)
		}
	}
}

// stopCleanly ends brokerd with SIGTERM, as systemd or boxmaker up would.
func (h *home) stopCleanly() {
	h.t.Helper()
	h.proc.Process.Signal(syscall.SIGTERM)
	if err := h.wait(); err != nil {
		h.t.Fatalf("brokerd after SIGTERM: %v\n%s", err, h.log)
	}
}

// wait waits for brokerd to exit by itself and returns how it ended.
func (h *home) wait() error {
	h.t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.proc.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		h.proc.Process.Kill()
		h.t.Fatalf("brokerd did not exit\n%s", h.log)
		return nil
	}
}

// startRefused runs brokerd and expects it to exit without serving.
func (h *home) startRefused() string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, boxmakerBinary(h.t), "brokerd", "--home", h.dir).CombinedOutput()
	out := string(b)
	if err == nil || ctx.Err() != nil {
		h.t.Fatalf("brokerd started and exited cleanly:\n%s", out)
	}
	return out
}

// The attack: `rm audit/*.jsonl audit/.lock` under a running brokerd.
func TestDeletedLogStopsBrokerd(t *testing.T) {
	h := newHome(t, "", nil)
	h.start()
	h.deniedCalls(2)
	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "*.jsonl"))
	for _, f := range append(files, filepath.Join(h.dir, "audit", ".lock")) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	res, _, err := h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: 3, Tool: "shell", Arguments: `{"command":"true"}`})
	if err == nil {
		if _, ok := res.(wire.Result); ok {
			t.Fatalf("a call after the log was deleted ran: %#v", res)
		}
	}
	if err := h.wait(); err == nil {
		t.Fatalf("brokerd exited cleanly after its log was deleted\n%s", h.log)
	}
	if log := h.log.String(); !strings.Contains(log, "deleted") || !strings.Contains(log, "restore") {
		t.Fatalf("brokerd's log does not say what it found and how to recover:\n%s", log)
	}
	if out := h.startRefused(); !strings.Contains(out, "deleted") {
		t.Fatalf("a restart over the deleted log did not refuse:\n%s", out)
	}
}

// Truncating the last records while brokerd is stopped is refused at start
// and by verify.
func TestTruncatedLogRefusesStart(t *testing.T) {
	h := newHome(t, "", nil)
	h.start()
	h.deniedCalls(3)
	h.stopCleanly()
	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "2*.jsonl"))
	day := files[len(files)-1]
	data, _ := os.ReadFile(day)
	cut := strings.LastIndexByte(strings.TrimSuffix(string(data), "\n"), '\n') + 1
	if err := os.Truncate(day, int64(cut)); err != nil {
		t.Fatal(err)
	}
	if out := h.startRefused(); !strings.Contains(out, "cut short") || !strings.Contains(out, "restore") {
		t.Fatalf("brokerd over a log cut short:\n%s", out)
	}
	out, err := h.bxctl("audit", "verify")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "cut off") {
		t.Fatalf("audit verify = exit %d:\n%s", code, out)
	}
}

// kill -9 between a batch and its checkpoint loses nothing: the restart
// checks the records after the last checkpoint and checkpoints them.
func TestKillBeforeCheckpointLosesNothing(t *testing.T) {
	h := newHome(t, "", nil)
	h.start()
	h.deniedCalls(2)
	h.stopCleanly()
	h.start()
	h.deniedCalls(3) // 1,000 records or a minute: no checkpoint of these yet
	h.stop()         // SIGKILL
	h.start()
	h.stopCleanly()
	out, err := h.bxctl("audit", "verify")
	if err != nil || !strings.Contains(out, "head seq 5") {
		t.Fatalf("audit verify after kill -9: %v\n%s", err, out)
	}
	out, err = h.bxctl("audit", "checkpoints")
	if err != nil || !strings.Contains(out, "seq 5 ") {
		t.Fatalf("audit checkpoints: %v\n%s", err, out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(interface{ ExitCode() int }); ok {
		return e.ExitCode()
	}
	return -1
}

// The owner's recovery from a log cut short: `audit rebase` moves it aside
// with brokerd's mirror, and brokerd starts on a new chain whose first
// record names the last checkpoint and the reason.
func TestRebaseAfterTruncatedLog(t *testing.T) {
	h := newHome(t, "", nil)
	h.start()
	h.deniedCalls(3)
	if out, err := h.bxctl("audit", "rebase", "--reason", "too early"); err == nil || !strings.Contains(out, "stop it") {
		t.Fatalf("audit rebase with brokerd running: %v\n%s", err, out)
	}
	h.stopCleanly()
	files, _ := filepath.Glob(filepath.Join(h.dir, "audit", "2*.jsonl"))
	if err := os.Truncate(files[len(files)-1], 0); err != nil {
		t.Fatal(err)
	}
	if out := h.startRefused(); !strings.Contains(out, "cut short") {
		t.Fatalf("brokerd over a log cut short:\n%s", out)
	}
	out, err := h.bxctl("audit", "rebase", "--reason", "restored from nothing")
	if err != nil {
		t.Fatalf("audit rebase: %v\n%s", err, out)
	}
	aside, _ := filepath.Glob(filepath.Join(h.dir, "audit.rebased-*"))
	if len(aside) != 1 {
		t.Fatalf("the old log was not kept beside audit/: %v\n%s", aside, out)
	}
	for _, name := range []string{"checkpoints.jsonl", "broker-checkpoint.last", filepath.Base(files[len(files)-1])} {
		if _, err := os.Stat(filepath.Join(aside[0], name)); err != nil {
			t.Errorf("the old %s was not kept: %v", name, err)
		}
	}
	h.start()
	h.deniedCalls(1)
	h.stopCleanly()
	if out, err := h.bxctl("audit", "verify"); err != nil || !strings.Contains(out, "head seq 2") {
		t.Fatalf("audit verify after the rebase: %v\n%s", err, out)
	}
	first, _ := filepath.Glob(filepath.Join(h.dir, "audit", "2*.jsonl"))
	data, _ := os.ReadFile(first[0])
	line, _, _ := strings.Cut(string(data), "\n")
	for _, want := range []string{`"seq":1,`, `"tool":"audit_rebase"`, `restored from nothing`, `checkpoint_seq\":3`} {
		if !strings.Contains(line, want) {
			t.Errorf("the new chain's first record lacks %s:\n%s", want, line)
		}
	}
}

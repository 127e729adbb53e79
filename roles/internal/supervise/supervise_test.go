package supervise

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/syncbuf"
)

// The daemons here are this test binary run again in a helper mode chosen
// by the environment: it listens on a socket, prints a line, and then lives,
// or dies after a while.
func TestMain(m *testing.M) {
	if uid := os.Getenv("SUPERVISE_TEST_KILLUID"); uid != "" {
		n, _ := strconv.Atoi(uid)
		if err := KillOwnUID(n); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mode := os.Getenv("SUPERVISE_TEST_DAEMON"); mode != "" {
		os.Exit(fakeDaemon(mode, os.Getenv("SUPERVISE_TEST_SOCKET")))
	}
	os.Exit(m.Run())
}

func fakeDaemon(mode, socket string) int {
	if mode == "silent" {
		time.Sleep(time.Hour)
		return 0
	}
	if mode == "escape" {
		if err := startEscapee(os.Getenv("SUPERVISE_TEST_PIDFILE")); err != nil {
			fmt.Println("escape:", err)
			return 1
		}
	}
	os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	fmt.Printf("listening on %s\npartial ", socket)
	fmt.Println("line done")
	if mode == "die" {
		time.Sleep(300 * time.Millisecond)
		return 3
	}
	time.Sleep(time.Hour)
	return 0
}

func daemon(t *testing.T, name, mode string) Daemon {
	sock := filepath.Join(t.TempDir(), name+".sock")
	return Daemon{Name: name, Args: []string{"-test.run=^$"}, Sockets: []string{sock},
		Env: []string{"SUPERVISE_TEST_DAEMON=" + mode, "SUPERVISE_TEST_SOCKET=" + sock}}
}

func options(log *syncbuf.Buffer, ds ...Daemon) Options {
	exe, _ := os.Executable()
	return Options{Executable: exe, Daemons: ds, Log: log, MaxRestarts: 2, Window: 5 * time.Second, StartWait: 5 * time.Second}
}

func TestStartsInOrderAndStopsAll(t *testing.T) {
	var log syncbuf.Buffer
	opts := options(&log, daemon(t, "first", "live"), daemon(t, "second", "live"))
	var mu sync.Mutex
	var last []Status
	opts.OnChange = func(st []Status) { mu.Lock(); last = st; mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	mu.Lock()
	running := last
	mu.Unlock()
	if len(running) != 2 || running[0].Role != "first" || running[1].Role != "second" {
		t.Fatalf("running %+v", running)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, st := range running {
		if syscall.Kill(st.PID, 0) == nil {
			t.Errorf("%s (pid %d) still runs after stop", st.Role, st.PID)
		}
	}
	if !strings.Contains(log.String(), "first: listening on ") || !strings.Contains(log.String(), "second: partial line done\n") {
		t.Errorf("log lines are not prefixed whole:\n%s", log.String())
	}
}

func TestRestartsThenGivesUp(t *testing.T) {
	var log syncbuf.Buffer
	start := time.Now()
	err := Run(context.Background(), options(&log, daemon(t, "flaky", "die")), nil)
	if err == nil || !strings.Contains(err.Error(), "flaky died 3 times") {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	if n := strings.Count(log.String(), "flaky exited"); n != 2 {
		t.Errorf("%d restart lines, want 2:\n%s", n, log.String())
	}
	if time.Since(start) < 500*time.Millisecond {
		t.Errorf("restarts came without backoff")
	}
}

func TestDaemonThatNeverAnswersFailsStart(t *testing.T) {
	var log syncbuf.Buffer
	opts := options(&log, daemon(t, "mute", "silent"))
	opts.StartWait = 300 * time.Millisecond
	err := Run(context.Background(), opts, func() { t.Error("ready although a daemon never answered") })
	if err == nil || !strings.Contains(err.Error(), "mute did not start") {
		t.Fatalf("Run: %v", err)
	}
}

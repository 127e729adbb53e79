package roles_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/brokerd"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/sock"
	"boxmaker/roles/loopd"
)

// The scheduler against brokerd's decisions on one clock the test moves:
// brokerd and loopd run in this process (real sockets, real sandbox, the
// scripted model on infer.sock), so a job due every minute comes due when
// the test says, and each due time runs once.

// jobsGrant reads inbox/ only in runs of the job inbox.
const jobsGrant = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"private\"\nuntrusted = false\njobs = [\"inbox\"]\n[constraints]\npaths = [\"inbox\"]\n"

// buildBinary builds boxmaker, which brokerd runs its sandboxes from.
func buildBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "boxmaker")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "boxmaker")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	return out
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testClock is the clock both roles read.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// runRole runs a role's Run until the test ends.
func runRole(t *testing.T, name string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
}

func TestSchedulerRunsEachDueMinute(t *testing.T) {
	_, err := sandbox.Check(context.Background(), "/usr/bin/bwrap")
	require.Bwrap(t, err)
	bin := buildBinary(t)
	home := t.TempDir()
	for rel, text := range map[string]string{
		"etc/config.toml":       "",
		"etc/grants/inbox.toml": jobsGrant,
		"etc/jobs/inbox.toml":   "every = \"1m\"\nprompt = \"read inbox/today.md\"\ndeliver = \"log\"\n",
		"memory/core.md":        "You are boxmaker.\n",
		"memory/inbox/today.md": "two letters from the bank\n",
	} {
		writeFile(t, filepath.Join(home, rel), text)
	}
	if err := os.MkdirAll(filepath.Join(home, "run", "loopd-inferproxy"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths, err := config.Resolve(home, "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	clock := &testClock{t: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)}
	ln, err := sock.Listen(filepath.Join(home, "run", "loopd-inferproxy", "infer.sock"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: llamadouble.New(llamadouble.Options{Script: llamadouble.Script{Rules: []llamadouble.Rule{
		{Match: `^read (?P<path>\S+)$`, ToolCalls: []llamadouble.ScriptedCall{{Name: "notes_read", Arguments: `{"path":"${path}"}`}}},
		{Role: "tool", Match: `(?s)^(?P<head>.*)$`, Content: "the note says: ${head}"},
	}}})}
	go model.Serve(ln)
	t.Cleanup(func() { model.Close() })
	runRole(t, "brokerd", func(ctx context.Context) error {
		return brokerd.Main(ctx, brokerd.Options{Paths: paths, Clock: clock.now, Executable: bin, Log: log.New(logs, "brokerd: ", 0)})
	})
	waitForFile(t, filepath.Join(home, "run", "loopd-brokerd", "broker.sock"), logs)
	runRole(t, "loopd", func(ctx context.Context) error {
		return loopd.Main(ctx, loopd.Options{Paths: paths, Clock: clock.now, JobTick: 20 * time.Millisecond, Log: log.New(logs, "loopd: ", 0)})
	})
	// loopd's first look lists the job: brokerd sees it first at 07:00,
	// so it is due at 07:01 (brokerd's tests refuse it before).
	waitForFile(t, filepath.Join(home, "broker", "jobs", "inbox.json"), logs)
	for _, minute := range []string{"0701", "0702"} {
		clock.add(time.Minute)
		log := filepath.Join(home, "sessions", "job-inbox-20261201"+minute, "1.jsonl")
		waitForText(t, log, "the note says: two letters from the bank", logs)
		if data, _ := os.ReadFile(log); !strings.Contains(string(data), `"content":"read inbox/today.md"`) {
			t.Errorf("the run's log lacks the prompt:\n%s", data)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "sessions")); len(entries) != 2 {
		t.Errorf("%d sessions, want the two runs\n%s", len(entries), logs)
	}
}

// waitForFile waits until path exists (a file or a socket).
func waitForFile(t *testing.T, path string, logs *syncbuf.Buffer) {
	t.Helper()
	if !poll.Holds(30*time.Second, 10*time.Millisecond, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatalf("%s never appeared\n%s", path, logs)
	}
}

// waitForText waits until the file at path exists and holds text.
func waitForText(t *testing.T, path, text string, logs *syncbuf.Buffer) {
	t.Helper()
	if !poll.Holds(30*time.Second, 10*time.Millisecond, func() bool {
		data, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(data), text)
	}) {
		t.Fatalf("%s never held %q\n%s", path, text, logs)
	}
}

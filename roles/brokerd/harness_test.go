package brokerd

import (
	"boxmaker/fixtures/poll"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The end-to-end tests run the real boxmaker binary as brokerd, with real
// sockets and real bubblewrap, and talk to it as loopd and as the owner.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// boxmakerBinary builds the binary once for the package's tests.
func boxmakerBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "brokerd-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "boxmaker")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "boxmaker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, binPath)
	}
	return binPath
}

// requireSandbox skips when tools cannot be sandboxed here; CI runs as root
// with bubblewrap installed, where these tests must run.
func requireSandbox(t testing.TB) {
	t.Helper()
	_, err := sandbox.Check(context.Background(), "/usr/bin/bwrap")
	require.Bwrap(t, err)
}

// home is a boxmaker home for one test.
type home struct {
	t      testing.TB
	dir    string
	proc   *exec.Cmd
	log    *syncbuf.Buffer // brokerd's log, written by exec's copying goroutine
	egress *exec.Cmd
}

func newHome(t testing.TB, config string, grants map[string]string) *home {
	t.Helper()
	requireSandbox(t)
	h := &home{t: t, dir: t.TempDir()}
	h.write("etc/config.toml", config)
	for id, text := range grants {
		h.write("etc/grants/"+id+".toml", text)
	}
	h.write("memory/notes/todo.md", "buy milk\n")
	h.write("memory/secret/bank.md", "PIN 0000\n")
	return h
}

func (h *home) write(rel, text string) {
	h.t.Helper()
	path := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *home) socket(client string) string {
	return filepath.Join(h.dir, "run", client+"-brokerd", "broker.sock")
}

// start runs brokerd and waits until both its sockets answer.
func (h *home) start() {
	h.t.Helper()
	h.log = &syncbuf.Buffer{}
	h.proc = exec.Command(boxmakerBinary(h.t), "brokerd", "--home", h.dir)
	h.proc.Stdout, h.proc.Stderr = h.log, h.log
	h.proc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.proc.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.stop)
	for _, client := range []string{"loopd", "bxctl"} {
		poll.Within(h.t, 15*time.Second, "brokerd to serve "+client+"'s socket", func() bool {
			c, err := sock.Dial(h.socket(client))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
}

// startEgress runs egressd beside brokerd and waits for its socket.
func (h *home) startEgress() {
	h.t.Helper()
	var log syncbuf.Buffer
	h.egress = exec.Command(boxmakerBinary(h.t), "egressd", "--home", h.dir)
	h.egress.Stdout, h.egress.Stderr = &log, &log
	h.egress.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.egress.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { h.egress.Process.Kill(); h.egress.Wait() })
	path := filepath.Join(h.dir, "run", "brokerd-egressd", "egress.sock")
	poll.Within(h.t, 15*time.Second, "egressd to serve egress.sock", func() bool {
		c, err := sock.Dial(path)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// stop ends brokerd with SIGKILL, as a crash would.
func (h *home) stop() {
	if h.proc != nil && h.proc.ProcessState == nil {
		h.proc.Process.Kill()
		h.proc.Wait()
	}
}

func (h *home) restart() {
	h.stop()
	h.start()
}

// call sends one message as loopd (or as the owner) and returns the final
// answer, with any partial frames.
func (h *home) call(client string, m wire.Message) (wire.Message, []wire.Message, error) {
	h.t.Helper()
	c, err := sock.Dial(h.socket(client))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	var partial []wire.Message
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, m, func(p wire.Message) error { partial = append(partial, p); return nil })
	return res, partial, err
}

func sessionID(t testing.TB, s string) wire.SessionID {
	id, err := wire.ParseSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// toolCall asks brokerd to run one call in session s and returns its final answer.
func (h *home) toolCall(s, tool, args string) wire.Message {
	h.t.Helper()
	res, _, err := h.call("loopd", wire.ToolRequest{Session: sessionID(h.t, s), Call: 1, Tool: tool, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s %s: %v\n%s", tool, args, err, h.log)
	}
	return res
}

// bxctl runs the boxmaker binary as the owner's command line against this home.
func (h *home) bxctl(args ...string) (string, error) {
	cmd := exec.Command(boxmakerBinary(h.t), append(args, "--home", h.dir)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

const (
	notesGrant  = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"
	secretGrant = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"secret\"]\n"
	echoGrant   = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"echo .*\"]\n"
	printfGrant = "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"printf .*\"]\n"
)

package loopd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The tests run loopd in-process through Run, with real sockets: the real
// boxmaker binary as brokerd (real grants, real sandbox, real audit log),
// and the scripted llama-server double served on infer.sock, where
// inferproxy would be.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// brokerMain replaces main.go in the test build: the same entry, listing
// brokerd and the toolkit its sandboxes run, so that loopd's tests need no
// other role to build.
const brokerMain = `package main

import (
	"context"
	"os"

	"boxmaker/roles"
	"boxmaker/roles/brokerd"
	"boxmaker/roles/toolkit"

	"github.com/urfave/cli/v3"
)

func main() {
	p := roles.Program{
		Roles: []roles.Role{
			{Name: "brokerd", Command: brokerd.Command},
			{Name: "toolkit", Command: toolkit.Command},
		},
		Commands: func() []*cli.Command { return nil },
	}
	os.Exit(p.Run(context.Background(), os.Args, os.Stdout, os.Stderr))
}
`

// boxmakerBinary builds the boxmaker binary, with brokerMain for main.go,
// once for the package's tests. It runs brokerd when argv[0] is brokerd.
func boxmakerBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binPath, buildErr = buildBroker() })
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binPath
}

// TestMain removes the test build of the binary afterwards.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildErr == nil && binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func buildBroker() (bin string, err error) {
	dir, err := os.MkdirTemp("", "loopd-test-bin")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	mainGo, err := filepath.Abs(filepath.Join("..", "..", "main.go"))
	if err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {mainGo: filepath.Join(dir, "main.go")}})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"main.go": []byte(brokerMain), "overlay.json": overlay} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	bin = filepath.Join(dir, "boxmaker")
	cmd := exec.Command("go", "build", "-trimpath", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "boxmaker")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return bin, nil
}

// env is one boxmaker home with brokerd, the double and loopd running.
type env struct {
	t      testing.TB
	home   string
	double *llamadouble.Server
	infer  *http.Server
	logs   *syncbuf.Buffer // brokerd's and loopd's
	stop   func()          // stops loopd
	open   int             // Options.OpenSessions
	broker *exec.Cmd       // brokerd as startBroker started it
}

// envOptions shape an env; the zero value is a plain one.
type envOptions struct {
	script  []llamadouble.Rule
	nCtx    int
	slots   int
	config  string            // config.toml
	grants  map[string]string // id -> grant file
	wrap    func(http.Handler) http.Handler
	noInfer bool // leave infer.sock unserved
	open    int  // sessions kept open; 0: the default
}

const (
	coreText   = "You are boxmaker, the owner's agent. Answer briefly.\n"
	notesGrant = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"notes\"]\n"
	askGrant   = "tool = \"notes_read\"\nmode = \"ask\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"asked\"]\n"
)

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	_, err := sandbox.Check(context.Background(), "/usr/bin/bwrap")
	require.Bwrap(t, err)
	e := &env{t: t, home: t.TempDir(), logs: &syncbuf.Buffer{}, open: o.open}
	e.write("etc/config.toml", o.config)
	e.write("memory/core.md", coreText)
	e.write("memory/notes/todo.md", "buy milk\n")
	e.write("memory/asked/plan.md", "the plan\n")
	grants := o.grants
	if grants == nil {
		grants = map[string]string{"notes": notesGrant, "asked": askGrant}
	}
	for id, text := range grants {
		e.write("etc/grants/"+id+".toml", text)
	}
	e.startBroker()
	e.double = llamadouble.New(llamadouble.Options{NCtx: o.nCtx, Slots: o.slots, Script: llamadouble.Script{Rules: o.script}})
	if !o.noInfer {
		var h http.Handler = e.double
		if o.wrap != nil {
			h = o.wrap(h)
		}
		e.serveInfer(h)
	}
	e.startLoopd()
	return e
}

func (e *env) write(rel, text string) {
	e.t.Helper()
	path := filepath.Join(e.home, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) paths() config.Paths {
	p, err := config.Resolve(e.home, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) socket(client, listener string) string {
	path, err := sock.PathOf(e.paths(), client, listener)
	if err != nil {
		panic(err) // the tests name pairs of the table
	}
	return path
}

// startBroker runs the real brokerd and waits for loopd's socket to it.
func (e *env) startBroker() {
	e.t.Helper()
	proc, err := e.launchBroker(boxmakerBinary(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	e.broker = proc
	e.waitFor(e.socket("loopd", "brokerd"), "brokerd")
}

// launchBroker starts brokerd from bin without waiting for it; any
// goroutine may call it.
func (e *env) launchBroker(bin string) (*exec.Cmd, error) {
	proc := exec.Command(bin, "--home", e.home)
	proc.Args[0] = "brokerd"
	proc.Stdout, proc.Stderr = e.logs, e.logs
	proc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := proc.Start(); err != nil {
		return nil, err
	}
	e.t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	return proc, nil
}

// serveInfer answers HTTP on infer.sock, where inferproxy listens.
func (e *env) serveInfer(h http.Handler) {
	e.t.Helper()
	ln, err := sock.Listen(e.socket("loopd", "inferproxy"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.infer = &http.Server{Handler: h}
	go e.infer.Serve(ln)
	e.t.Cleanup(func() { e.infer.Close() })
}

// startLoopd runs loopd in-process until stopLoopd or the test's end.
func (e *env) startLoopd() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, Options{Paths: e.paths(), Log: log.New(e.logs, "loopd: ", 0), OpenSessions: e.open})
	}()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("loopd: %v", err)
			}
		})
	}
	e.t.Cleanup(e.stop)
	e.waitFor(e.socket("bxctl", "loopd"), "loopd")
	e.waitFor(e.socket("gatewayd", "loopd"), "loopd")
}

func (e *env) restartLoopd() {
	e.stop()
	e.startLoopd()
}

func (e *env) waitFor(path, what string) {
	e.t.Helper()
	if !poll.Holds(15*time.Second, 10*time.Millisecond, func() bool {
		c, err := sock.Dial(path)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		e.t.Fatalf("%s did not start\n%s", what, e.logs)
	}
}

// turnOut is what a chat_send got back.
type turnOut struct {
	events []wire.ChatEvent
	done   wire.ChatDone
	err    error
}

// outcomes lists the tool_result events' outcomes, in order.
func (o turnOut) outcomes() []string {
	var out []string
	for _, ev := range o.events {
		if r, ok := ev.(wire.ToolResultEvent); ok {
			out = append(out, r.Outcome)
		}
	}
	return out
}

// calls lists the tool_call events' call ids, in order.
func (o turnOut) calls() []wire.CallID {
	var out []wire.CallID
	for _, ev := range o.events {
		if c, ok := ev.(wire.ToolCallEvent); ok {
			out = append(out, c.Call)
		}
	}
	return out
}

// chat sends one message as bxctl ("" session: a new one) and collects
// the turn; onEvent, if set, sees each event as it arrives.
func (e *env) chat(session, content string, onEvent func(wire.ChatEvent)) turnOut {
	e.t.Helper()
	return e.chatVia("bxctl", session, content, onEvent)
}

// chatVia is chat through client's socket to loopd.
func (e *env) chatVia(client, session, content string, onEvent func(wire.ChatEvent)) turnOut {
	e.t.Helper()
	c, err := sock.Dial(e.socket(client, "loopd"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	var send wire.ChatSend
	send.Content = content
	if session != "" {
		id := sessionID(e.t, session)
		send.Session = &id
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out turnOut
	final, err := c.Call(ctx, send, func(m wire.Message) error {
		ev := m.(wire.ChatEvent)
		out.events = append(out.events, ev)
		if onEvent != nil {
			onEvent(ev)
		}
		return nil
	})
	out.err = err
	if err == nil {
		out.done = final.(wire.ChatDone)
	}
	return out
}

// mustChat is chat that fails the test on an error.
func (e *env) mustChat(session, content string) turnOut {
	e.t.Helper()
	return e.mustChatVia("bxctl", session, content)
}

// mustChatVia is chatVia that fails the test on an error.
func (e *env) mustChatVia(client, session, content string) turnOut {
	e.t.Helper()
	out := e.chatVia(client, session, content, nil)
	if out.err != nil {
		e.t.Fatalf("chat %q: %v\n%s", content, out.err, e.logs)
	}
	return out
}

func sessionID(t testing.TB, s string) wire.SessionID {
	id, err := wire.ParseSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// readLog reads an epoch file as a verifier would: every line whole and
// decoding strictly.
func (e *env) readLog(session string, epoch int) []wire.LogRecord {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.home, "sessions", session, strconv.Itoa(epoch)+".jsonl"))
	if err != nil {
		e.t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		e.t.Fatalf("session %s epoch %d ends without a newline", session, epoch)
	}
	var out []wire.LogRecord
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		r, err := wire.DecodeLogRecord(line)
		if err != nil {
			e.t.Fatalf("session %s epoch %d line %d: %v\n%s", session, epoch, i+1, err, line)
		}
		out = append(out, r)
	}
	return out
}

// chatRequests are the chat completions the double answered, in order.
func (e *env) chatRequests() []llamadouble.RecordedRequest {
	var out []llamadouble.RecordedRequest
	for _, r := range e.double.Requests() {
		if r.Path == "/v1/chat/completions" {
			out = append(out, r)
		}
	}
	return out
}

// kinds names each record's type, for comparing a log's shape.
func kinds(recs []wire.LogRecord) string {
	var out []string
	for _, r := range recs {
		switch r.(type) {
		case wire.SessionStart:
			out = append(out, "start")
		case wire.User:
			out = append(out, "user")
		case wire.Assistant:
			out = append(out, "assistant")
		case wire.ToolResult:
			out = append(out, "result")
		case wire.CacheLoss:
			out = append(out, "cache_loss")
		case wire.EpochEnd:
			out = append(out, "epoch_end")
		}
	}
	return strings.Join(out, " ")
}

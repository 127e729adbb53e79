package brokerd

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// The side-by-side rows of issue 15's table: each benchmark takes turns
// between brokerd and its reference in the same run, call for call, and
// reports both p50s and their ratio as x-vs-ref (reportVsRef).

// timed runs f once and returns how long it took.
func timed(b *testing.B, f func() error) time.Duration {
	start := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkNotesReadVsBwrap is an auto notes_read through the real sandbox
// (decided, audited, a fresh bubblewrap sandbox running the toolkit, the
// session's state checked) against `bwrap --ro-bind / / true`. Issue 15
// asks for at most 1.5 times.
func BenchmarkNotesReadVsBwrap(b *testing.B) {
	h := newHome(b, "", map[string]string{"notes": notesGrant})
	h.start()
	c := dialLoopd(b, h)
	s, _ := wire.ParseSessionID("bench")
	read := func() error {
		res, err := c.Call(context.Background(), wire.ToolRequest{Session: s, Call: 1, Tool: "notes_read", Arguments: `{"path":"notes/todo.md"}`}, nil)
		if err != nil {
			return err
		}
		if r, ok := res.(wire.Result); !ok || !strings.Contains(r.Content, "buy milk") {
			b.Fatalf("got %#v\n%s", res, h.log)
		}
		return nil
	}
	bwrap := func() error { return exec.Command("/usr/bin/bwrap", "--ro-bind", "/", "/", "true").Run() }
	var ds, refs []time.Duration
	for b.Loop() {
		ds = append(ds, timed(b, read))
		refs = append(refs, timed(b, bwrap))
	}
	reportVsRef(b, ds, refs)
}

// BenchmarkDeniedCallVsFsync is a denied call (decided, audited with its
// fsync, answered) against one fsync of a small file: 100 bytes written
// over the start of a file in brokerd's home, on the audit log's file
// system, then fsync. Issue 15 asks for at most 1.5 times.
func BenchmarkDeniedCallVsFsync(b *testing.B) {
	h := startBench(b)
	c := dialLoopd(b, h)
	s, _ := wire.ParseSessionID("bench")
	f, err := os.OpenFile(filepath.Join(h.dir, "fsync-ref"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := make([]byte, 100)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	line[99] = '\n'
	fsync := func() error {
		if _, err := f.WriteAt(line, 0); err != nil {
			return err
		}
		return f.Sync()
	}
	denied := func() error { return expect[wire.Denied](c, s, `{"command":"rm -rf /"}`) }
	var ds, refs []time.Duration
	for b.Loop() {
		ds = append(ds, timed(b, denied))
		refs = append(refs, timed(b, fsync))
	}
	reportVsRef(b, ds, refs)
}

// echoChildEnv tells the test binary, started again by BenchmarkToolListVsEcho,
// to be the echo child: TestFrameEchoChild then echoes frames on fd 3.
const echoChildEnv = "BOXMAKER_BENCH_ECHO_CHILD"

// TestFrameEchoChild is not a test: it is the child process of
// BenchmarkToolListVsEcho, and returns at once unless started as one. It
// reads frames from its end of a socketpair (fd 3) and writes each back
// unchanged, as one write, until the stream ends.
func TestFrameEchoChild(t *testing.T) {
	if os.Getenv(echoChildEnv) != "1" {
		t.Skip("the echo child of BenchmarkToolListVsEcho")
	}
	conn := os.NewFile(3, "echo")
	r := bufio.NewReader(conn)
	for {
		body, err := wire.ReadFrame(r)
		if err == io.EOF {
			os.Exit(0)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteFrame(conn, body); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkToolListVsEcho is a tool_list round trip as loopd makes it
// (encoded, framed, decided from the grants, answered, decoded) against a
// cross-process echo of the same request frame over a Unix socketpair: a
// child process reads each frame and writes it back. Issue 15 asks for at
// most 2 times.
func BenchmarkToolListVsEcho(b *testing.B) {
	h := startBench(b)
	c := dialLoopd(b, h)
	s, _ := wire.ParseSessionID("bench")
	list := func() error {
		res, err := c.Call(context.Background(), wire.ToolList{Session: s}, nil)
		if err != nil {
			return err
		}
		if l, ok := res.(wire.ToolListResult); !ok || len(l.Tools) == 0 {
			b.Fatalf("got %#v\n%s", res, h.log)
		}
		return nil
	}

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "echo-parent"), os.NewFile(uintptr(fds[1]), "echo-child")
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	child := exec.Command(self, "-test.run=^TestFrameEchoChild$", "-test.count=1")
	child.Env = append(os.Environ(), echoChildEnv+"=1")
	child.ExtraFiles = []*os.File{theirs}
	child.Stderr = os.Stderr
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	theirs.Close()
	b.Cleanup(func() { conn.Close(); child.Wait() })
	frame, err := wire.Encode(wire.Envelope{ID: 1, Final: true, Msg: wire.ToolList{Session: s}})
	if err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(conn)
	echo := func() error {
		if err := wire.WriteFrame(conn, frame); err != nil {
			return err
		}
		_, err := wire.ReadFrame(r)
		return err
	}
	for range 10 { // the child's first frames pay its start
		timed(b, echo)
	}

	var ds, refs []time.Duration
	for b.Loop() {
		ds = append(ds, timed(b, list))
		refs = append(refs, timed(b, echo))
	}
	reportVsRef(b, ds, refs)
}

package mcpclient

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/wire"
)

const repoRoot = "../../../.."

// instance is Serve running in a goroutine, driven as brokerd would.
type instance struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *io.PipeReader
	diag *syncBuffer
	done chan error
	id   uint64
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var testLimits = Limits{ResultBytes: 64 << 10, CallTime: 5 * time.Second, StartTime: 20 * time.Second}

func startInstance(t *testing.T, srv Server, lim Limits) *instance {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	inst := &instance{t: t, in: inW, out: outR, diag: &syncBuffer{}, done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, inst.diag, srv, lim)
		if err != nil {
			inst.diag.Write([]byte("Serve: " + err.Error() + "\n"))
		}
		outW.CloseWithError(io.EOF)
		inst.done <- err
	}()
	t.Cleanup(func() { inW.Close(); <-inst.done })
	return inst
}

// ask sends m and returns every frame of the response, the last final.
func (i *instance) ask(m wire.Message) []wire.Message {
	i.t.Helper()
	i.id++
	go wire.WriteEnvelope(i.in, wire.Envelope{ID: i.id, Final: true, Msg: m})
	var got []wire.Message
	for {
		env, err := wire.ReadEnvelope(i.out)
		if err != nil {
			i.t.Fatalf("reading the answer to %s: %v (diagnostics: %s)", wire.KindOf(m), err, i.diag.String())
		}
		if env.ID != i.id {
			if !env.Final { // a notice that came after its request's answer
				got = append(got, env.Msg)
				continue
			}
			i.t.Fatalf("frame for id %d, want %d", env.ID, i.id)
		}
		got = append(got, env.Msg)
		if env.Final {
			return got
		}
	}
}

func (i *instance) tools() wire.McpToolsResult {
	i.t.Helper()
	got := i.ask(wire.McpTools{})
	res, ok := got[len(got)-1].(wire.McpToolsResult)
	if !ok {
		i.t.Fatalf("tools: got %#v", got)
	}
	return res
}

func (i *instance) call(tool, args string) []wire.Message {
	i.t.Helper()
	return i.ask(wire.McpToolCall{Tool: wire.McpToolName(tool), Arguments: wire.McpText(args)})
}

func resultText(t *testing.T, got []wire.Message) wire.McpToolResult {
	t.Helper()
	r, ok := got[len(got)-1].(wire.McpToolResult)
	if !ok {
		t.Fatalf("want a result, got %#v", got[len(got)-1])
	}
	return r
}

// hostileServer builds fixtures/mcphostile once per test binary.
var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

func hostile(t *testing.T, env ...string) Server {
	t.Helper()
	hostileOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcphostile")
		if err != nil {
			hostileErr = err
			return
		}
		hostileBin = filepath.Join(dir, "mcphostile")
		cmd := exec.Command("go", "build", "-o", hostileBin, "boxmaker/fixtures/mcphostile")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			hostileErr = &buildError{string(out)}
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return Server{Command: []string{hostileBin}, Env: append([]string{"PATH=/usr/bin:/bin"}, env...), Dir: t.TempDir()}
}

type buildError struct{ out string }

func (e *buildError) Error() string { return "build mcphostile: " + e.out }

func nodeServer(t *testing.T, which func(require.MCPServers) string, args ...string) Server {
	t.Helper()
	s := require.MCP(t, repoRoot)
	home := t.TempDir()
	return Server{Command: append([]string{s.Node, which(s)}, args...), Dir: home,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home}}
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f || r == 0x202e })
}

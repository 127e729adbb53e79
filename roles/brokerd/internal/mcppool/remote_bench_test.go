package mcppool

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/fdpass"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The speed figure of issue 28: a warm call to a remote (streamable HTTP)
// server through the sandbox, toolkit mcp and egressd, against the Go
// SDK's own client calling the same local server directly. The server is
// the Go SDK's StreamableHTTPHandler with one tool, echo {text}.

type echoArgs struct {
	Text string `json:"text"`
}

// streamableServer serves echo over streamable HTTP on a loopback port and
// returns its URL.
func streamableServer(b testing.TB) string {
	b.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-remote", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "says the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go hs.Serve(ln)
	b.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// serverPlaces are where the local server runs: in the benchmark's own
// process, and in a process of its own, as a server the owner runs is.
var serverPlaces = []struct {
	name  string
	start func(testing.TB) string
}{{"in-process", streamableServer}, {"own-process", streamableServerProcess}}

// BenchmarkMCPRemoteWarmCallDirectSDK is the Go SDK's client, outside any
// sandbox, calling echo on its session to the local server.
func BenchmarkMCPRemoteWarmCallDirectSDK(b *testing.B) {
	for _, place := range serverPlaces {
		b.Run(place.name, func(b *testing.B) { directRemoteCalls(b, place.start(b)) })
	}
}

func directRemoteCalls(b *testing.B, url string) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	if _, err := cs.CallTool(ctx, call); err != nil {
		b.Fatal(err) // the warm-up, as the sandboxed benchmark has
	}
	b.ResetTimer()
	for range b.N {
		if _, err := cs.CallTool(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMCPRemoteWarmCallSandboxed is the same call made as brokerd
// makes it: through the session's instance (bubblewrap, toolkit mcp with
// only its channel to egressd), egressd as its own process (the real role)
// carrying each HTTP exchange to the server, and the result's frame back.
func BenchmarkMCPRemoteWarmCallSandboxed(b *testing.B) {
	for _, place := range serverPlaces {
		b.Run(place.name, func(b *testing.B) { sandboxedRemoteCalls(b, place.start(b)) })
	}
}

func sandboxedRemoteCalls(b *testing.B, url string) {
	egress := egressSocket(b)
	srv := config.MCPServer{URL: url, MemoryMB: 512, Processes: 4096}
	p, _ := testPool(b, map[wire.McpServer]config.MCPServer{"r": srv}, time.Hour, 4)
	p.cfg.Channel = func(ctx context.Context, _ wire.McpServer, srv config.MCPServer) (*os.File, error) {
		return fdpass.OpenMCPEgress(ctx, egress, wire.McpURL(srv.URL), nil)
	}
	ctx := context.Background()
	session, _ := wire.ParseSessionID("bench")
	if m, err := p.Call(ctx, session, "r", "echo", `{"text":"hi"}`, allowAll); err != nil {
		b.Fatal(err, m)
	}
	b.ResetTimer()
	for range b.N {
		if m, err := p.Call(ctx, session, "r", "echo", `{"text":"hi"}`, allowAll); err != nil {
			b.Fatal(err, m)
		}
	}
}

var (
	egressOnce sync.Once
	egressBin  string
	egressErr  error
)

// egressSocket runs egressd from a build of boxmaker, on a socket in a
// home of its own, and returns the socket's path.
func egressSocket(b testing.TB) string {
	b.Helper()
	dir, _, _ := binaries(b)
	egressOnce.Do(func() {
		egressBin = filepath.Join(dir, "boxmaker-full")
		cmd := exec.Command("go", "build", "-o", egressBin, "boxmaker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			egressErr = errors.New(string(out))
		}
	})
	if egressErr != nil {
		b.Fatal(egressErr)
	}
	home := b.TempDir()
	var log syncbuf.Buffer
	cmd := exec.Command(egressBin, "egressd", "--home", home)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	path := filepath.Join(home, "run", "brokerd-egressd", "egress.sock")
	poll.Within(b, 15*time.Second, "egressd to serve egress.sock", func() bool {
		c, err := sock.Dial(path)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return path
}

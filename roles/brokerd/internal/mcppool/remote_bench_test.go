package mcppool

import (
	"context"
	"net"
	"net/http"
	"testing"

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

// BenchmarkMCPRemoteWarmCallDirectSDK is the Go SDK's client, outside any
// sandbox, calling echo on its session to the local server.
func BenchmarkMCPRemoteWarmCallDirectSDK(b *testing.B) {
	url := streamableServer(b)
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

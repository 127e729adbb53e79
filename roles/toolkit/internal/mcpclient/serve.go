package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"boxmaker/wire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is the MCP server to start as the client's child.
type Server struct {
	Command []string // argv; Command[0] absolute
	Env     []string // the whole environment
	Dir     string   // its working directory
}

// Limits bound one instance.
type Limits struct {
	ResultBytes int           // a result's text is cut here (and at wire.MaxMcpText)
	CallTime    time.Duration // one call, from request to result
	StartTime   time.Duration // the server's start and handshake
	MaxLine     int           // the longest JSON-RPC line read from the server
}

// DefaultMaxLine is the longest line the client reads from a server: far
// beyond any result brokerd keeps, so that an 8 MiB reply is read and cut,
// while an endless one breaks the connection instead of the memory limit.
const DefaultMaxLine = 16 << 20

// ErrEnded says the instance ended because the server hung, died or broke
// the protocol: brokerd starts another for the next call.
var ErrEnded = errors.New("the MCP server ended")

// Serve starts srv, connects to it, then answers brokerd's frames from in on
// out until in ends (the instance is closed) or the server fails (ErrEnded,
// after the failing call got its McpToolError). diag takes the server's
// stderr and the client's notes, one sanitized line each.
func Serve(ctx context.Context, in io.Reader, out io.Writer, diag io.Writer, srv Server, lim Limits) error {
	f := &frames{out: out, diag: newLines(diag)}
	cs, cmd, err := start(ctx, srv, lim, f)
	if err != nil {
		return failStart(in, f, err)
	}
	defer stop(cs, cmd)
	return serveFrames(ctx, in, f, cs, lim)
}

// failStart answers brokerd's first frame with the reason the server did
// not start (so that the owner reads it, not a closed pipe), then returns
// err.
func failStart(in io.Reader, f *frames, err error) error {
	env, rerr := wire.ReadEnvelope(in)
	if rerr == nil {
		f.begin(env.ID)
		f.send(wire.McpToolError{Message: wire.McpText(Cut1(oneLine(err.Error()), 4096)), Ended: true})
		f.end()
	}
	return err
}

// serveFrames answers brokerd's frames from in until in ends or the
// server fails.
func serveFrames(ctx context.Context, in io.Reader, f *frames, cs *mcp.ClientSession, lim Limits) error {
	for {
		env, err := wire.ReadEnvelope(in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read from brokerd: %w", err)
		}
		if err := f.answer(ctx, cs, env, lim); err != nil {
			return err
		}
	}
}

// start runs the server and makes the MCP handshake, within lim.StartTime.
func start(ctx context.Context, srv Server, lim Limits, f *frames) (*mcp.ClientSession, *exec.Cmd, error) {
	if len(srv.Command) == 0 {
		return nil, nil, errors.New("no server command")
	}
	cmd := exec.Command(srv.Command[0], srv.Command[1:]...)
	cmd.Env, cmd.Dir = srv.Env, srv.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = f.diag.writer("server: ")
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", srv.Command[0], err)
	}
	client := newClient(f)
	sctx, cancel := context.WithTimeout(ctx, lim.StartTime)
	defer cancel()
	maxLine := lim.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	cs, err := client.Connect(sctx, &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: maxLine}, nil)
	if err != nil {
		stop(nil, cmd)
		return nil, nil, fmt.Errorf("%w: no MCP handshake within %v: %s", ErrEnded, lim.StartTime, oneLine(err.Error()))
	}
	return cs, cmd, nil
}

// stop ends the session and the server's whole process group.
func stop(cs *mcp.ClientSession, cmd *exec.Cmd) {
	if cs != nil {
		done := make(chan struct{})
		go func() { cs.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// refused are the requests a server may send its client that boxmaker's
// never grants (DESIGN.md section 16): it declares none of them, and a
// server that asks anyway gets an error and a line in the log.
var refused = []string{"sampling/createMessage", "elicitation/create", "roots/list"}

func newClient(f *frames) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "boxmaker", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, // no roots, sampling or elicitation
		//lint:ignore SA1019 servers still send log notifications; they go to brokerd's log, sanitized and bounded
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			p := r.Params
			data, _ := Canonical(p.Data)
			f.notice(wire.McpLog, fmt.Sprintf("%s %s: %s", p.Level, p.Logger, data))
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			p := r.Params
			f.notice(wire.McpProgress, fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message))
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			f.notice(wire.McpListChanged, "")
		},
	})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			for _, m := range refused {
				if method == m {
					f.diag.line("refused the server's request " + method)
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "boxmaker's MCP client does not offer " + method}
				}
			}
			return next(ctx, method, req)
		}
	})
	return c
}

// answer handles one frame from brokerd.
func (f *frames) answer(ctx context.Context, cs *mcp.ClientSession, env wire.Envelope, lim Limits) error {
	f.begin(env.ID)
	defer f.end()
	switch m := env.Msg.(type) {
	case wire.McpTools:
		res, err := listTools(ctx, cs, lim)
		if err != nil {
			f.send(wire.McpToolError{Message: wire.McpText(Cut1(oneLine(err.Error()), 4096)), Ended: true})
			return fmt.Errorf("%w: %v", ErrEnded, err)
		}
		return f.send(res)
	case wire.McpToolCall:
		return f.call(ctx, cs, m, lim)
	default:
		return fmt.Errorf("brokerd sent a %s frame, which toolkit mcp does not take", wire.KindOf(env.Msg))
	}
}

func listTools(ctx context.Context, cs *mcp.ClientSession, lim Limits) (wire.McpToolsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, lim.CallTime)
	defer cancel()
	init := cs.InitializeResult()
	res := wire.McpToolsResult{Tools: []wire.McpToolDef{}}
	if init != nil {
		res.Protocol = wire.McpText(Cut1(init.ProtocolVersion, 64))
		if init.ServerInfo != nil {
			res.Name = wire.McpText(Cut1(init.ServerInfo.Name, 256))
			res.Version = wire.McpText(Cut1(init.ServerInfo.Version, 256))
		}
	}
	total := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return res, fmt.Errorf("tools/list: %s", oneLine(err.Error()))
		}
		if len(res.Tools) == wire.MaxMcpTools {
			return res, fmt.Errorf("the server lists more than %d tools", wire.MaxMcpTools)
		}
		def, err := Definition(t)
		if err != nil || wire.McpToolName(t.Name).Check() != nil {
			// A name or definition the wire cannot carry: left out, so
			// it can never be pinned or offered.
			continue
		}
		if total += len(def); total > wire.MaxMcpText {
			return res, fmt.Errorf("the server's tool definitions exceed %d bytes", wire.MaxMcpText)
		}
		res.Tools = append(res.Tools, wire.McpToolDef{Name: wire.McpToolName(t.Name), Definition: wire.McpText(def)})
	}
	return res, nil
}

// call makes one tool call. A JSON-RPC error is the server's answer and the
// instance goes on; a timeout, a dead server or a broken line ends it.
func (f *frames) call(ctx context.Context, cs *mcp.ClientSession, m wire.McpToolCall, lim Limits) error {
	ctx, cancel := context.WithTimeout(ctx, lim.CallTime)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: string(m.Tool), Arguments: json.RawMessage(m.Arguments)})
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == codeRejected && ctx.Err() == nil:
		// The streamable HTTP transport's "the request never reached the
		// server" (egressd refused it, or the server is down): the error's
		// whole text says why, and the next call starts afresh.
		f.send(wire.McpToolError{Message: wire.McpText("the server failed: " + Cut1(oneLine(err.Error()), 1024)), Ended: true})
		return fmt.Errorf("%w: %s", ErrEnded, oneLine(err.Error()))
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejected:
		return f.send(wire.McpToolError{Message: wire.McpText(Cut1(oneLine(fmt.Sprintf("server error %d: %s", rpcErr.Code, rpcErr.Message)), 4096))})
	case ctx.Err() != nil:
		f.send(wire.McpToolError{Message: wire.McpText(fmt.Sprintf("the server did not answer within %v", lim.CallTime)), Ended: true})
		return fmt.Errorf("%w: a call took over %v", ErrEnded, lim.CallTime)
	case err != nil:
		f.send(wire.McpToolError{Message: wire.McpText("the server failed: " + Cut1(oneLine(err.Error()), 1024)), Ended: true})
		return fmt.Errorf("%w: %s", ErrEnded, oneLine(err.Error()))
	}
	limit := min(lim.ResultBytes, wire.MaxMcpText)
	text, truncated := Render(res, limit)
	return f.sendResult(text, res.IsError, truncated)
}

// codeRejected is the Go SDK's jsonrpc2.ErrRejected, which its streamable
// HTTP transport wraps around a request that did not reach the server.
const codeRejected = -32005

// oneLine keeps an error's text to one sanitized line.
func oneLine(s string) string { return strings.Join(strings.Fields(sanitize(s)), " ") }

// frames writes toolkit's side of the conversation: one response at a time,
// with the notices that arrive while it is open.
type frames struct {
	mu       sync.Mutex
	out      io.Writer
	diag     *lines
	id       uint64 // the current or last request's
	notices  int    // sent since that request began
	writeErr error
}

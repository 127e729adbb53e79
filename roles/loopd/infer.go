package loopd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// inferClient speaks llama-server's HTTP API over infer.sock. The host in
// its URLs is a placeholder: every connection goes to the socket.
type inferClient struct {
	http *http.Client
	base string // inferBase, or the upstream's own URL for verify-device

	mu    sync.Mutex
	props *serverProps // from the last /props that answered
}

// serverProps is what loopd needs from GET /props.
type serverProps struct {
	NCtx    uint64       // tokens in one slot's context
	Slots   uint32       // total_slots, at least 1
	Markers *turnMarkers // the model's turn markers, from its chat templates, BOS and EOS
}

const inferBase = "http://infer.sock"

func newInferClient(socket string) *inferClient {
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			// Waits a little for an inferproxy that restarts (redial).
			return redial(ctx, func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) })
		},
		MaxIdleConnsPerHost: 8,
		// infer.sock serves at most sock.DefaultMaxConns connections; past
		// it a request gets a 503. loopd is its one client, so it keeps
		// well below that and a busy moment queues here instead (the soak,
		// 64 turns at a time, found the 503s).
		MaxConnsPerHost: 32,
		// Streams are read as they come; compression would only delay them.
		DisableCompression: true,
	}
	return &inferClient{http: &http.Client{Transport: tr}, base: inferBase}
}

// newUpstreamClient is the same client speaking to a llama-server at base
// (http://host:port) over TCP, for verify-device alone: the daemon only
// ever dials infer.sock. No proxy from the environment is used.
func newUpstreamClient(base string) *inferClient {
	tr := &http.Transport{
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression: true,
		// A connection per request: llama-server says Keep-Alive after a
		// stream and then closes, so a request sent on it at once got EOF
		// (issue 26: verify-device against the real server, once in three runs).
		DisableKeepAlives: true,
	}
	return &inferClient{http: &http.Client{Transport: tr}, base: strings.TrimSuffix(base, "/")}
}

func (c *inferClient) close() { c.http.CloseIdleConnections() }

// serverProps returns the server's context size, slot count and turn
// markers, asking /props once and again only after forget.
func (c *inferClient) serverProps(ctx context.Context) (serverProps, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.props != nil {
		return *c.props, nil
	}
	var body struct {
		Settings struct {
			NCtx uint64 `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int64 `json:"total_slots"`
		// What the model's markers are learnt from. Any of them may be
		// missing (an older build, no jinja) or of another type; the
		// markers of common templates are neutralised anyway.
		ChatTemplate json.RawMessage `json:"chat_template"`
		ToolUse      json.RawMessage `json:"chat_template_tool_use"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	if err := c.getJSON(ctx, "/props", &body); err != nil {
		return serverProps{}, err
	}
	if body.Settings.NCtx == 0 {
		return serverProps{}, errors.New("the model server's /props gives no default_generation_settings.n_ctx")
	}
	p := serverProps{
		NCtx: body.Settings.NCtx, Slots: uint32(max(1, min(body.TotalSlots, 1<<16))),
		Markers: newTurnMarkers([]string{stringOf(body.ChatTemplate), stringOf(body.ToolUse)}, stringOf(body.BOS), stringOf(body.EOS)),
	}
	c.props = &p
	return p, nil
}

// stringOf is a JSON string's value, or "" for anything else.
func stringOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// forget drops the cached /props, after an error that may mean the server
// was restarted with other settings.
func (c *inferClient) forget() {
	c.mu.Lock()
	c.props = nil
	c.mu.Unlock()
}

func (c *inferClient) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return upstreamErrorOf(resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("the model server's %s is not JSON: %w", path, err)
	}
	return nil
}

// chat posts one streaming chat request and returns the event stream. A
// first error comes back as an ordinary HTTP error (llama-server sends
// errors before the stream starts that way) and is returned here.
func (c *inferClient) chat(ctx context.Context, body []byte) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, upstreamErrorOf(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("the model server answered %q, not an event stream", mt)
	}
	return resp.Body, nil
}

// unreachable names the way to the model server that failed: infer.sock
// for the daemon, the server's own address for verify-device, which dials
// it over TCP.
func (c *inferClient) unreachable(err error) error {
	if c.base == inferBase {
		return fmt.Errorf("the model server is not reachable through infer.sock: %w", err)
	}
	return fmt.Errorf("the model server at %s is not reachable: %w", c.base, err)
}

// upstreamError is an error the model server (or inferproxy) answered.
type upstreamError struct {
	Status  int
	Type    string
	Message string
}

func (e *upstreamError) Error() string {
	msg := fmt.Sprintf("the model server answered %d", e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Type != "" {
		msg += " (" + e.Type + ")"
	}
	return msg
}

// upstreamErrorOf reads llama-server's {"error":{code,message,type}}, or
// keeps the start of any other body (inferproxy's own 502, say).
func upstreamErrorOf(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &upstreamError{Status: resp.StatusCode}
	var body struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil {
		e.Message, e.Type = body.Error.Message, body.Error.Type
		return e
	}
	e.Message = shorten(strings.TrimSpace(string(data)), 300)
	return e
}

// apiError is the error object llama-server sends, also inside a stream.
type apiError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

// shorten cuts s to at most n bytes on a character boundary, for messages.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

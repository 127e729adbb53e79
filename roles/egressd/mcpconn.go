package egressd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// mcpHeadTime bounds how long the sandbox may take to write a request's
// head and body on a fresh connection.
const mcpHeadTime = 10 * time.Second

// mcpSessionHeader is streamable HTTP's session id, which the sandbox sends
// back on every request.
const mcpSessionHeader = "Mcp-Session-Id"

// serveConn serves the one request the sandbox writes on conn: to the
// url's origin and path only, with POST, GET or DELETE, the secret added;
// the response streams back as it comes (an SSE reply or the GET stream),
// cleaned of the secret and cut at max_bytes. It ends when the response
// does, when the sandbox closes conn, or when the channel ends.
func (c *channel) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	rec := &record{where: c.grant.target.Scheme + "://" + c.grant.target.Authority()}
	_ = conn.SetReadDeadline(time.Now().Add(mcpHeadTime))
	req, err := readRequest(conn)
	if err == nil {
		rec.method = req.Method
		var out *http.Request
		if out, err = c.outbound(ctx, req); err == nil {
			_ = conn.SetReadDeadline(time.Time{})
			go watchClose(conn, cancel)
			err = c.relay(ctx, conn, out, rec)
		}
	} else {
		err = &failure{status: http.StatusBadRequest, kind: "bad_request", public: "egressd could not read the request: " + err.Error()}
	}
	if err != nil {
		f := failureOf(ctx, err, c.grant.secret)
		rec.status, rec.problem = f.status, f.detail
		if !errors.Is(err, errAnswered) {
			_ = f.response().Write(conn)
		}
	}
	c.lines.print("mcp " + c.grant.secret.redact(rec.String()))
}

// errAnswered is a failure after the response head went out: nothing more
// can be said to the sandbox, which sees its stream end.
var errAnswered = errors.New("the response was under way")

// watchClose cancels the exchange when the sandbox closes its end (the
// client gave up on a call or a stream): an upstream that sends nothing
// would otherwise hold the connection. The request was read whole, so
// whatever else arrives ends the exchange too.
func watchClose(conn net.Conn, cancel context.CancelFunc) {
	var b [1]byte
	_, _ = conn.Read(b[:])
	cancel()
}

// mcpMethods are streamable HTTP's: a POST per message, the GET stream
// (and its resumption), the DELETE that ends a session.
var mcpMethods = []string{http.MethodPost, http.MethodGet, http.MethodDelete}

// outbound checks the sandbox's request and builds the one egressd sends,
// from the url brokerd sent, never from the sandbox's own.
func (c *channel) outbound(ctx context.Context, req *http.Request) (*http.Request, error) {
	ok := false
	for _, m := range mcpMethods {
		ok = ok || req.Method == m
	}
	if !ok {
		return nil, &failure{status: http.StatusMethodNotAllowed, kind: "refused", public: fmt.Sprintf("an MCP server takes POST, GET and DELETE, not %.20q", req.Method)}
	}
	if req.RequestURI != c.grant.path {
		return nil, refused("egressd serves this MCP server's path only")
	}
	body, err := readMCPBody(req)
	if err != nil {
		return nil, err
	}
	t := c.grant.target
	u := &url.URL{Scheme: t.Scheme, Host: urlHost(t), Path: req.URL.Path, RawPath: req.URL.RawPath}
	out, err := http.NewRequestWithContext(ctx, req.Method, u.String(), body)
	if err != nil {
		return nil, &failure{status: http.StatusBadRequest, kind: "bad_request", public: err.Error()}
	}
	out.Header = mcpRequestHeader(req.Header)
	// The bytes must come back as they are, so that the secret can be
	// found in them.
	out.Header.Del("Accept-Encoding")
	if c.grant.secret.isSet() {
		out.Header.Set("Authorization", c.grant.secret.value)
	}
	return out, nil
}

// mcpMaxRequestBody bounds one message the sandbox posts: brokerd's frames
// (wire.MaxFrame, 1 MiB) bound a call's arguments below it, and eight
// connections of a channel at once must not hold much of egressd's memory.
const mcpMaxRequestBody = 2 << 20

// readMCPBody reads a POST's message whole (a GET or DELETE has none).
func readMCPBody(req *http.Request) (io.Reader, error) {
	if req.Method != http.MethodPost {
		if req.ContentLength != 0 || len(req.TransferEncoding) > 0 {
			return nil, &failure{status: http.StatusBadRequest, kind: "bad_request", public: "a GET or DELETE request must not have a body"}
		}
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, mcpMaxRequestBody+1))
	switch {
	case err != nil:
		return nil, &failure{status: http.StatusBadRequest, kind: "bad_request", public: "egressd could not read the request body: " + err.Error()}
	case len(data) > mcpMaxRequestBody:
		return nil, &failure{status: http.StatusRequestEntityTooLarge, kind: "refused", public: fmt.Sprintf("the request body is over %d bytes", mcpMaxRequestBody)}
	}
	return bytes.NewReader(data), nil
}

// relay makes out upstream and streams the response to conn.
func (c *channel) relay(ctx context.Context, conn net.Conn, out *http.Request, rec *record) error {
	up, err := c.client.Do(out)
	if err != nil {
		return err
	}
	defer up.Body.Close()
	rec.status = up.StatusCode
	if err := c.checkResponse(up); err != nil {
		return err
	}
	h := mcpResponseHeader(up.Header, c.grant.secret)
	dropControlValues(h)
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "HTTP/1.1 %03d %s\r\n", up.StatusCode, http.StatusText(up.StatusCode))
	_ = h.Write(w)
	// No length: the body ends when the connection does, so that egressd
	// may cut it and take the secret out of it as it streams.
	w.WriteString("Connection: close\r\n\r\n")
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: writing the head: %v", errAnswered, err)
	}
	n, cut, err := c.stream(conn, up.Body)
	rec.bytes, rec.truncated = n, cut
	if cut {
		rec.addProblem(fmt.Sprintf("the response passed max_bytes (%d) and was cut", c.s.limits.MaxBytes))
	}
	if err != nil && ctx.Err() == nil {
		rec.addProblem(err.Error())
	}
	return nil
}

// checkResponse refuses what egressd will not pass on: a protocol switch
// (the upstream connection itself would be the body), a redirect (an MCP
// server has one endpoint, and following one would reach another origin),
// an encoded body it could not clean of the secret, and a session id that
// is not visible ASCII, as streamable HTTP requires of it.
func (c *channel) checkResponse(up *http.Response) error {
	if up.StatusCode < 200 {
		return &failure{status: http.StatusBadGateway, kind: "upstream", public: fmt.Sprintf("the MCP server answered %d, which egressd does not pass on", up.StatusCode)}
	}
	if up.StatusCode >= 300 && up.StatusCode < 400 {
		where := "another URL"
		if loc, err := url.Parse(up.Header.Get("Location")); err == nil && loc.Hostname() != "" {
			// Redacted before the cut, which could leave the start of
			// the secret where redaction would no longer find it.
			where = fmt.Sprintf("%.64q", c.grant.secret.redact(loc.Hostname()))
		}
		return refused("the MCP server answered %d, a redirect to %s: egressd follows no redirect for an MCP server", up.StatusCode, where)
	}
	if encoded(up.Header) {
		return &failure{status: http.StatusBadGateway, kind: "upstream", public: "the MCP server sent an encoded body (Content-Encoding), which egressd does not pass on"}
	}
	for _, id := range up.Header.Values(mcpSessionHeader) {
		if !visibleASCII(id) || len(id) > 1024 {
			return &failure{status: http.StatusBadGateway, kind: "upstream", public: "the MCP server sent an Mcp-Session-Id that is not visible ASCII (or is over 1024 bytes); egressd refuses it"}
		}
	}
	return nil
}

func visibleASCII(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// dropControlValues removes every header value holding a control
// character: none may reach the sandbox's client, whose errors are logged.
func dropControlValues(h http.Header) {
	for name, values := range h {
		kept := values[:0]
		for _, v := range values {
			if !strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				kept = append(kept, v)
			}
		}
		if len(kept) == 0 {
			delete(h, name)
		} else {
			h[name] = kept
		}
	}
}

// stream copies body to conn as it arrives, flushing each read (an SSE
// event goes out when it comes in), the secret taken out even when it is
// split across reads, and stops at max_bytes.
func (c *channel) stream(conn net.Conn, body io.Reader) (int, bool, error) {
	limit := c.s.limits.MaxBytes
	red := newStreamRedactor(c.grant.secret, conn)
	buf := make([]byte, 32<<10)
	total := 0
	for {
		n, err := body.Read(buf)
		if total+n > limit {
			n = limit - total
			total += n
			_ = red.write(buf[:n])
			red.close(true)
			return total, true, nil
		}
		total += n
		if werr := red.write(buf[:n]); werr != nil {
			return total, false, werr
		}
		if err == io.EOF {
			return total, false, red.close(false)
		}
		if err != nil {
			red.close(true)
			return total, false, err
		}
	}
}

package egressd

import (
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

// serveConn serves the requests the sandbox writes on conn, one after
// another: each to the url's origin and path only, with POST, GET or
// DELETE, the secret added; each response streams back as it comes (an
// SSE reply or the GET stream), cleaned of the secret and cut at
// max_bytes. It ends when the sandbox closes conn or leaves it idle, after
// a failure, or when the channel ends; the upstream connection kept beside
// it ends with it.
func (c *channel) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	l := newLink(conn)
	up := &upstreamConn{c: c}
	defer up.drop()
	for wait := mcpHeadTime; c.serveRequest(ctx, l, up, wait); wait = mcpIdle {
	}
}

// serveRequest serves the next request on l, if one comes within wait,
// and reports whether l may carry another.
func (c *channel) serveRequest(ctx context.Context, l *link, up *upstreamConn, wait time.Duration) bool {
	if !l.next(wait) {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec := &record{where: c.grant.target.Scheme + "://" + c.grant.target.Authority()}
	keep := false
	req, err := l.readRequest()
	if err == nil {
		rec.method = req.Method
		keep, err = c.exchange(ctx, cancel, l, up, req, rec)
	} else {
		err = &failure{status: http.StatusBadRequest, kind: "bad_request", public: "egressd could not read the request: " + err.Error()}
	}
	if err != nil {
		f := failureOf(ctx, err, c.grant.secret)
		rec.status, rec.problem = f.status, f.detail
		if !errors.Is(err, errAnswered) {
			_ = f.response().Write(l.conn) // Connection: close; the link ends
		}
	}
	c.lines.print("mcp " + c.grant.secret.redact(rec.String()))
	return keep && err == nil
}

// exchange checks req, makes it upstream and relays the answer, and
// reports whether l may carry another request.
func (c *channel) exchange(ctx context.Context, cancel context.CancelFunc, l *link, up *upstreamConn, req *http.Request, rec *record) (bool, error) {
	out, err := c.outbound(ctx, req)
	if err != nil {
		return false, err
	}
	w := l.watch(cancel)
	keep, err := c.relay(ctx, l, up, out, rec, w)
	alone := w.stop()
	if !alone && err != nil && !errors.Is(err, errAnswered) {
		err = errPipelined // the watch cancelled it, not egressd stopping
	}
	// A chunked request ends the connection after its answer: it may have
	// carried a Content-Length too, which Go's parser drops, and RFC 9112
	// (6.1) has a server close after such a request (toolkit's client
	// always sends a length).
	return alone && keep && !req.Close && len(req.TransferEncoding) == 0, err
}

// errPipelined is the answer to a request the sandbox wrote more after
// before it was answered.
var errPipelined = &failure{status: http.StatusBadRequest, kind: "bad_request", public: "the sandbox wrote on the connection before its request was answered: egressd serves one request at a time on a connection (no pipelining)"}

// errAnswered is a failure after the response head went out: nothing more
// can be said to the sandbox, which sees its stream end.
var errAnswered = errors.New("the response was under way")

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

package egressd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"boxmaker/policy"
)

const (
	// maxHeaderBytes bounds the request head the sandbox writes and the
	// response head an upstream sends.
	maxHeaderBytes = 64 << 10
	// maxRequestBody bounds a POST body (a consult prompt); a job is smaller.
	maxRequestBody = 4 << 20
	// writeGrace is how long after the call's deadline egressd still tries
	// to write its answer, so that a timeout reaches the sandbox as a 504.
	writeGrace = 2 * time.Second
)

// callGrant is what one egress_open allows.
type callGrant struct {
	hosts  policy.HostSet
	method string // the one method brokerd allowed for this call
	secret secret
}

// serveCall serves the one request on conn, answers it and closes conn.
// Everything, from reading the request to the last byte of the response
// body, happens within the configured timeout.
func (s *server) serveCall(ctx context.Context, conn net.Conn, g callGrant) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	deadline := time.Now().Add(s.limits.Timeout.D())
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	_ = conn.SetReadDeadline(deadline)
	_ = conn.SetWriteDeadline(deadline.Add(writeGrace))
	rec := &record{}
	resp, err := s.exchange(ctx, conn, g, rec)
	s.answer(ctx, conn, g.secret, rec, resp, err)
}

// answer writes resp, or the failure err, to the sandbox and logs the call
// without the secret.
func (s *server) answer(ctx context.Context, conn net.Conn, sec secret, rec *record, resp *http.Response, err error) {
	if err != nil {
		f := failureOf(ctx, err, sec)
		rec.status, rec.problem = f.status, f.detail
		resp = f.response()
	}
	if werr := resp.Write(conn); werr != nil {
		rec.addProblem("writing the answer: " + werr.Error())
	}
	s.log.Print(sec.redact(rec.String()))
	if err != nil {
		linger(conn)
	}
}

// lingerTime bounds how long a refused call's descriptor stays open.
const lingerTime = time.Second

// linger ends egressd's side and discards what the sandbox still sends, for
// a short while: a request refused before it was read whole leaves bytes
// unread, and closing then would reset the connection before the sandbox
// reads the answer that says why.
func linger(conn net.Conn) {
	if uc, ok := conn.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	_ = conn.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, maxRequestBody+maxHeaderBytes))
}

// exchange reads the sandbox's request, makes it upstream and returns the
// response to write back.
func (s *server) exchange(ctx context.Context, conn net.Conn, g callGrant, rec *record) (*http.Response, error) {
	req, err := readRequest(conn)
	if err != nil {
		return nil, &failure{status: http.StatusBadRequest, kind: "bad_request", public: "egressd could not read the request: " + err.Error()}
	}
	rec.method = req.Method
	out, target, err := outbound(ctx, req, g)
	if err != nil {
		return nil, err
	}
	rec.where = target.Scheme + "://" + target.Authority()
	return s.fetch(out, target, g, rec)
}

// readRequest reads one request, its head bounded by maxHeaderBytes.
func readRequest(conn net.Conn) (*http.Request, error) {
	lr := &io.LimitedReader{R: conn, N: maxHeaderBytes}
	req, err := http.ReadRequest(bufio.NewReader(lr))
	if err != nil {
		return nil, err
	}
	lr.N = maxRequestBody + maxHeaderBytes // room for the body and its framing
	return req, nil
}

// outbound checks the sandbox's request and builds the one egressd sends:
// from the checked target, never from the sandbox's own parse of its URL.
func outbound(ctx context.Context, req *http.Request, g callGrant) (*http.Request, policy.URLTarget, error) {
	if err := checkMethod(req.Method, g); err != nil {
		return nil, policy.URLTarget{}, err
	}
	target, ok, why := g.hosts.AllowsURL(req.RequestURI)
	if !ok {
		return nil, target, refused("the grant does not allow this URL: %s", why)
	}
	body, err := readBody(req)
	if err != nil {
		return nil, target, err
	}
	u := &url.URL{Scheme: target.Scheme, Host: urlHost(target), Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	out, err := http.NewRequestWithContext(ctx, req.Method, u.String(), body)
	if err != nil {
		return nil, target, &failure{status: http.StatusBadRequest, kind: "bad_request", public: err.Error()}
	}
	out.Header = forwardHeader(req.Header)
	if g.secret.isSet() {
		out.Header.Set("Authorization", g.secret.value)
	}
	return out, target, nil
}

// checkMethod allows only the method brokerd named for the call: GET for
// http_fetch, POST for consult's one endpoint.
func checkMethod(method string, g callGrant) error {
	if method == g.method {
		return nil
	}
	return &failure{status: http.StatusMethodNotAllowed, kind: "refused",
		public: fmt.Sprintf("this call may make %s requests only, not %.20q", g.method, method)}
}

// readBody reads a POST body whole (so that a redirect can resend it); a
// GET must have none.
func readBody(req *http.Request) (io.Reader, error) {
	if req.Method == http.MethodGet {
		if req.ContentLength != 0 || len(req.TransferEncoding) > 0 {
			return nil, &failure{status: http.StatusBadRequest, kind: "bad_request", public: "a GET request must not have a body"}
		}
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBody+1))
	switch {
	case err != nil:
		return nil, &failure{status: http.StatusBadRequest, kind: "bad_request", public: "egressd could not read the request body: " + err.Error()}
	case len(data) > maxRequestBody:
		return nil, &failure{status: http.StatusRequestEntityTooLarge, kind: "refused", public: fmt.Sprintf("the request body is over %d bytes", maxRequestBody)}
	}
	return bytes.NewReader(data), nil
}

// urlHost is the target's host for a URL: the port is left out when it is
// the scheme's default, as servers expect in the Host header.
func urlHost(t policy.URLTarget) string {
	if t.Scheme == "https" && t.Port == 443 || t.Scheme == "http" && t.Port == 80 {
		return strings.TrimSuffix(t.Authority(), fmt.Sprintf(":%d", t.Port))
	}
	return t.Authority()
}

// strippedRequestHeaders never leave egressd: credentials the sandbox must
// not choose, and hop-by-hop headers that belong to its connection.
var strippedRequestHeaders = []string{
	"Authorization", "Cookie", "Cookie2", "Host", "Content-Length", "Expect",
	"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forwardHeader is the sandbox's header less what egressd strips, and less
// any Proxy-* header and any header Connection names.
func forwardHeader(h http.Header) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, name := range h.Values("Connection") {
		for _, n := range strings.Split(name, ",") {
			out.Del(strings.TrimSpace(n))
		}
	}
	for _, name := range strippedRequestHeaders {
		out.Del(name)
	}
	for name := range out {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Proxy-") {
			delete(out, name)
		}
	}
	return out
}

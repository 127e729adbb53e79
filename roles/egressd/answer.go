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
)

// Headers egressd writes back beside the upstream's. An upstream's own
// X-Boxmaker-* headers are dropped, so that it cannot forge them.
const (
	errorHeader     = "X-Boxmaker-Error"     // bad_request, refused, timeout, upstream
	truncatedHeader = "X-Boxmaker-Truncated" // "true" when the body was cut at max_bytes
)

// failure is a call egressd does not complete. The sandbox reads status,
// kind and public; detail, which may name the addresses a host resolved to,
// goes to the log only.
type failure struct {
	status int
	kind   string
	public string
	detail string
}

func (f *failure) Error() string { return f.public }

// refused is a failure that policy or the address rules decided.
func refused(format string, args ...any) *failure {
	return &failure{status: http.StatusForbidden, kind: "refused", public: fmt.Sprintf(format, args...)}
}

// failureOf turns an error from anywhere in the call into the failure the
// sandbox is told about, without the secret.
func failureOf(ctx context.Context, err error, sec secret) *failure {
	var f *failure
	var netErr net.Error
	switch {
	case errors.As(err, &f):
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		f = timedOut()
	case errors.Is(err, context.Canceled):
		f = &failure{status: http.StatusServiceUnavailable, kind: "upstream", public: "egressd is stopping"}
	default:
		f = &failure{status: http.StatusBadGateway, kind: "upstream", public: "the upstream request failed: " + withoutURL(err).Error()}
	}
	if ctx.Err() == context.DeadlineExceeded && f.kind == "upstream" {
		// Whatever broke first, the deadline is why.
		f = timedOut()
	}
	out := *f
	out.public = sec.redact(out.public)
	if out.detail == "" {
		out.detail = out.public
	}
	return &out
}

func timedOut() *failure {
	return &failure{status: http.StatusGatewayTimeout, kind: "timeout", public: "the call took longer than its time limit"}
}

// withoutURL drops the URL that net/http wraps around its errors: the log
// line names the host, never the path.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// response is the failure as an HTTP response for the sandbox.
func (f *failure) response() *http.Response {
	body := []byte(f.public + "\n")
	h := http.Header{}
	h.Set(errorHeader, f.kind)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	return bodyResponse(f.status, h, body)
}

// bodyResponse is a whole response with body in memory; the connection ends
// after it, since a descriptor serves one request.
func bodyResponse(status int, h http.Header, body []byte) *http.Response {
	return &http.Response{
		StatusCode: status, ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Close: true,
	}
}

// strippedResponseHeaders are the upstream connection's own (egressd frames
// the body again itself), and the cookies an upstream issues: often a
// session worth as much as the grant's secret, which nothing in the sandbox
// reads (one request per call, no cookie jar) and a compromised sandbox
// could hand on to the model.
var strippedResponseHeaders = []string{
	"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length",
	"Set-Cookie", "Set-Cookie2",
}

// backHeader is the upstream's header for the sandbox: hop-by-hop, Proxy-*
// and X-Boxmaker-* headers dropped, and the secret out of every value.
func backHeader(h http.Header, sec secret) http.Header {
	out := http.Header{}
	for name, values := range h {
		canon := http.CanonicalHeaderKey(name)
		if strings.HasPrefix(canon, "Proxy-") || strings.HasPrefix(canon, "X-Boxmaker-") {
			continue
		}
		for _, v := range values {
			out.Add(canon, sec.redact(v))
		}
	}
	for _, name := range h.Values("Connection") {
		for _, n := range strings.Split(name, ",") {
			out.Del(strings.TrimSpace(n))
		}
	}
	for _, name := range strippedResponseHeaders {
		out.Del(name)
	}
	return out
}

package inferproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
)

// MaxRequestBytes caps a request body: far above any prompt a local
// model's context holds, far below what would strain inferproxy.
const MaxRequestBytes = 16 << 20

// proxy forwards allowed requests to the upstream.
type proxy struct {
	upstream *url.URL
	// accepts are the requests it forwards, "METHOD /path": the accept
	// list of its pair in the role table, the endpoints loopd uses
	// (DESIGN.md section 8). Every other method or path is refused.
	accepts []string
	// routes holds a row for each of accepts: what is checked before the
	// request goes upstream (routeChecks).
	routes    map[string]check
	allowPeer func(sock.Peer) bool // nil: the table's
	log       *log.Logger
	transport *http.Transport
	inspect   config.Inspect // whose reserved slot loopd may not use
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	check, ok := p.routes[r.Method+" "+r.URL.Path] // by its decoded path exactly: no prefix, no trailing slash, no dot segments
	if !ok {
		// Logged: loopd never asks for these, so one is a bug or a probe.
		p.log.Printf("refused %s %q: not an endpoint loopd uses", r.Method, r.URL.Path)
		p.fail(w, http.StatusForbidden, "permission_error", fmt.Sprintf("%s %s is not forwarded; only %s are", r.Method, r.URL.Path, strings.Join(p.accepts, ", ")))
		return
	}
	if r.ContentLength > MaxRequestBytes {
		p.fail(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("the request body of %d bytes is over the cap of %d", r.ContentLength, MaxRequestBytes))
		return
	}
	body, ok := p.readBody(w, r)
	if !ok {
		return
	}
	if !check(w, r, body) {
		return
	}
	resp, err := p.roundTrip(p.outgoing(r), body)
	if err != nil {
		p.upstreamFailed(w, r, err)
		return
	}
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	suppressDefaults(w.Header())
	w.WriteHeader(resp.StatusCode)
	p.relay(w, r, resp.Body)
}

// readBody reads r's body whole (bounded by MaxRequestBytes), so that a
// chat request can be checked (slotAllowed) and any request sent again
// (roundTrip); when it cannot, it has answered the client.
func (p *proxy) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := readBody(w, r)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		p.fail(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("the request body is over the cap of %d bytes", MaxRequestBytes))
		return nil, false
	case err != nil:
		p.fail(w, http.StatusBadRequest, "invalid_request_error", "the request body could not be read")
		return nil, false
	}
	return body, true
}

// roundTrip sends out with body. llama-server answers a stream with
// Keep-Alive and then closes the connection, so the next request on it
// fails before any response comes; such a request, failed on a reused
// connection, is sent again (at most twice more), which for llama-server's
// endpoints repeats no effect but computation.
func (p *proxy) roundTrip(out *http.Request, body []byte) (*http.Response, error) {
	for try := 0; ; try++ {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) { reused = c.Reused }}
		req := out.WithContext(httptrace.WithClientTrace(out.Context(), trace))
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := p.transport.RoundTrip(req)
		if err == nil || !reused || try == 2 || out.Context().Err() != nil {
			return resp, err
		}
		p.log.Printf("%s %s: the upstream closed a kept-alive connection (%v); sending it again", out.Method, out.URL.Path, err)
	}
}

// slotAllowed reports whether a chat request with body may go upstream
// (slotRefusal); when not, it has answered the client.
func (p *proxy) slotAllowed(w http.ResponseWriter, r *http.Request, body []byte) bool {
	why, err := p.slotRefusal(r, body)
	if err != nil {
		p.upstreamFailed(w, r, err)
		return false
	}
	if why != "" {
		// Logged: loopd never sends these, so one is a bug or a probe.
		p.log.Printf("refused %s %s: %s", r.Method, r.URL.Path, why)
		p.fail(w, http.StatusForbidden, "permission_error", why)
		return false
	}
	return true
}

// check is what a route looks at before its request goes upstream; when
// it says no, it has answered the client.
type check func(w http.ResponseWriter, r *http.Request, body []byte) bool

// routeChecks is what infer.sock answers: a row for each endpoint the
// role table lets through it. Only a chat request's body names a slot.
func (p *proxy) routeChecks() map[string]check {
	return map[string]check{
		http.MethodPost + " " + chatPath: p.slotAllowed,
		"GET /health":                    forwardAsIs,
		"GET /props":                     forwardAsIs,
		"POST /tokenize":                 forwardAsIs,
	}
}

func forwardAsIs(http.ResponseWriter, *http.Request, []byte) bool { return true }

// routesFor is the rows of routeChecks for accepts, or the error that names
// each accepted endpoint without one: inferproxy does not start with a
// route the gate lets through and nothing answers.
func (p *proxy) routesFor(accepts []string) (map[string]check, error) {
	all, rows := p.routeChecks(), map[string]check{}
	var missing []string
	for _, route := range accepts {
		if all[route] == nil {
			missing = append(missing, route)
		}
		rows[route] = all[route]
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("infer.sock accepts %s, which nothing answers", strings.Join(missing, ", "))
	}
	return rows, nil
}

// outgoing is r addressed to the upstream: the same method, path, query,
// headers and body, less the hop-by-hop headers.
func (p *proxy) outgoing(r *http.Request) *http.Request {
	target := *p.upstream
	target.Path += r.URL.Path
	target.RawQuery = r.URL.RawQuery
	out := &http.Request{
		Method: r.Method, URL: &target, Host: target.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.Header.Clone(), ContentLength: r.ContentLength,
	}
	if out.Header == nil {
		out.Header = http.Header{}
	}
	removeHopByHop(out.Header)
	out.Header.Del("Expect") // 100-continue is this hop's business, answered by our server
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // an empty value keeps Go from adding its own
	}
	return out.WithContext(r.Context()) // roundTrip gives it the body
}

// hopByHop are the headers that belong to one connection (RFC 9110
// section 7.6.1), which a proxy must not pass on.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = append([]string(nil), vv...)
	}
	removeHopByHop(dst)
}

// suppressDefaults keeps net/http from adding a Date or a sniffed
// Content-Type that the upstream did not send: a nil value tells the
// server to leave the header out.
func suppressDefaults(h http.Header) {
	for _, name := range []string{"Date", "Content-Type"} {
		if _, ok := h[name]; !ok {
			h[name] = nil
		}
	}
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// relay copies the upstream's body to the client, flushing after every
// read, so each chunk reaches loopd when it reaches inferproxy. If the
// upstream breaks off, the client's response is cut off too (no clean end
// that would pass for a whole reply).
func (p *proxy) relay(w http.ResponseWriter, r *http.Request, body io.Reader) {
	rc := http.NewResponseController(w)
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // loopd went away; closing the upstream body cancels the request there
			}
			if rc.Flush() != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if r.Context().Err() == nil {
				p.log.Printf("%s %s: the upstream broke off the response: %v", r.Method, r.URL.Path, err)
			}
			panic(http.ErrAbortHandler)
		}
	}
}

// upstreamFailed answers a request that got no response from the upstream.
func (p *proxy) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		p.fail(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("the request body is over the cap of %d bytes", MaxRequestBytes))
	case r.Context().Err() != nil:
		// loopd gave up; nobody is left to answer.
	default:
		msg := fmt.Sprintf("the upstream llama-server at %s did not answer %s %s: %v", p.upstream.Redacted(), r.Method, r.URL.Path, err)
		p.log.Print(msg)
		p.fail(w, http.StatusBadGateway, "unavailable_error", msg)
	}
}

// fail answers with inferproxy's own error, in llama-server's shape so that
// loopd reads it like any other: {"error":{"code","message","type"}}, the
// HTTP status equal to code, the message one line.
func (p *proxy) fail(w http.ResponseWriter, code int, typ, msg string) {
	body := errorBody(code, typ, msg)
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// errorBody is an error as llama-server's OpenAI-style API writes one.
func errorBody(code int, typ, msg string) []byte {
	body, _ := json.Marshal(map[string]map[string]any{"error": {
		"code": code, "message": "inferproxy: " + oneLine(msg), "type": typ,
	}})
	return body
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

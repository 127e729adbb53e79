package egressd

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"

	"boxmaker/policy"
)

// fetch makes out, following redirects that pass the same checks, and
// returns the response for the sandbox with its body read, capped and
// cleaned of the secret.
func (s *server) fetch(out *http.Request, target policy.URLTarget, g callGrant, rec *record) (*http.Response, error) {
	gd := s.newGuard(g.hosts)
	gd.approve(target)
	client := &http.Client{
		Transport:     s.transport(gd),
		CheckRedirect: gd.checkRedirect(s.limits.MaxRedirects, rec),
		// No Timeout here: the call's context bounds everything, body included.
	}
	up, err := client.Do(out)
	if err != nil {
		return nil, err
	}
	defer up.Body.Close()
	if up.StatusCode < 200 {
		return nil, fmt.Errorf("the upstream answered %d, an informational status, as its final answer", up.StatusCode)
	}
	return s.capture(up, g.secret, rec)
}

// transport is a fresh transport for one call: it dials only through the
// guard, never through a proxy from the environment (the guard would see
// only the proxy's address), speaks HTTP/1.1 only (no HTTP/2 connection
// outlives a request or dials on its own), keeps no connection for later
// calls, and does the TLS itself with the URL's host name for SNI and
// certificate verification.
func (s *server) transport(gd *guard) *http.Transport {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            gd.dial,
		TLSClientConfig:        &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12},
		Protocols:              &protocols,
		DisableKeepAlives:      true,
		DisableCompression:     true, // bytes pass as they came; max_bytes counts them
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
}

// checkRedirect re-checks every hop against the hosts entries, counts the
// hops, and points the next request at the checked target; the guard then
// checks its addresses when it dials.
func (gd *guard) checkRedirect(max int, rec *record) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return refused("more than %d redirects", max)
		}
		target, ok, why := gd.hosts.AllowsURL(req.URL.String())
		if !ok {
			return refused("a redirect leads where the grant does not allow: %s", why)
		}
		gd.approve(target)
		req.URL.Scheme, req.URL.Host = target.Scheme, urlHost(target)
		rec.redirects = len(via)
		return nil
	}
}

// capture reads at most max_bytes of the body and builds the response the
// sandbox reads.
func (s *server) capture(up *http.Response, sec secret, rec *record) (*http.Response, error) {
	limit := s.limits.MaxBytes
	body, err := io.ReadAll(io.LimitReader(up.Body, int64(limit)+1))
	if err == nil {
		// The transport can end a body cut by the deadline with a plain
		// EOF; a body that ends as time runs out is not known to be whole.
		err = up.Request.Context().Err()
	}
	if err != nil {
		return nil, fmt.Errorf("reading the response body: %w", err)
	}
	truncated := len(body) > limit
	if truncated {
		body = body[:limit]
	}
	body = sec.redactBody(body, truncated)
	h := backHeader(up.Header, sec)
	if truncated {
		h.Set(truncatedHeader, "true")
	}
	rec.status, rec.bytes, rec.truncated = up.StatusCode, len(body), truncated
	return bodyResponse(up.StatusCode, h, body), nil
}

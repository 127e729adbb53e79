package egressd

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"syscall"
	"time"
)

// upstreamConn is one sandbox connection's own connection to the MCP
// server: egressd writes each request on it and reads the response itself,
// with no transport's goroutines between, and keeps it for that sandbox
// connection's next request only. It is dialed through the channel's guard
// (the url's origin and nothing else), speaks HTTP/1.1 (TLS with the url's
// host and no ALPN), never through a proxy, and follows nothing: a
// response is passed on or refused, never acted on.
type upstreamConn struct {
	c    *channel
	raw  net.Conn // the TCP connection, under TLS for https
	conn net.Conn
	lr   *io.LimitedReader // bounds the response head
	br   *bufio.Reader
	bw   *bufio.Writer
	stop func() bool // ends the closing of conn with the exchange's context
}

// roundTrip writes out within [egress] timeout from the start (dial and
// TLS included) and reads the response head within the call's limit; ctx's end closes the
// connection, which ends the exchange wherever it is. The caller reads the
// body and then calls done.
func (u *upstreamConn) roundTrip(ctx context.Context, out *http.Request) (*http.Response, error) {
	if u.conn != nil && !u.idle() {
		u.drop()
	}
	deadline := time.Now().Add(u.c.s.limits.Timeout.D())
	if u.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		err := u.dial(dctx)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	conn := u.conn
	u.stop = context.AfterFunc(ctx, func() { conn.Close() })
	_ = u.conn.SetDeadline(deadline)
	if err := out.Write(u.bw); err != nil {
		return nil, err
	}
	if err := u.bw.Flush(); err != nil {
		return nil, err
	}
	// The head of a JSON reply comes with the call's result.
	_ = u.conn.SetReadDeadline(time.Now().Add(max(u.c.s.limits.Timeout.D(), u.c.s.mcpCallTime+mcpHeadGrace)))
	resp, err := u.readHead(out)
	if err != nil {
		return nil, err
	}
	_ = u.conn.SetDeadline(time.Time{})
	return resp, nil
}

// mcpHeadGrace is how much longer than the call's limit egressd waits for a
// response head: toolkit gives up first and says so in its own words.
const mcpHeadGrace = 5 * time.Second

// mcpMaxInterim is how many interim (1xx) responses may come before the
// final one, as Go's own transport allows: a server that sends them
// endlessly would otherwise keep egressd parsing heads until the timeout.
const mcpMaxInterim = 5

// readHead reads the response head, at most maxHeaderBytes, past at most
// mcpMaxInterim interim (1xx) responses; 101 (a protocol switch) is
// refused.
func (u *upstreamConn) readHead(out *http.Request) (*http.Response, error) {
	for interim := 0; ; interim++ {
		if interim > mcpMaxInterim {
			return nil, fmt.Errorf("the MCP server sent over %d interim (1xx) responses", mcpMaxInterim)
		}
		u.lr.N = maxHeaderBytes
		resp, err := http.ReadResponse(u.br, out)
		if err != nil {
			if u.lr.N == 0 {
				return nil, fmt.Errorf("the response head is over %d bytes", maxHeaderBytes)
			}
			return nil, err
		}
		u.lr.N = math.MaxInt64 // the body is bounded by max_bytes as it streams
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("the MCP server answered 101, a protocol switch")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		}
		return resp, nil
	}
}

// dial connects through the channel's guard, which checks every address
// the url's host resolves to, and does the TLS for https.
func (u *upstreamConn) dial(ctx context.Context) error {
	t := u.c.grant.target
	raw, err := u.c.guard.dial(ctx, "tcp", t.Authority())
	if err != nil {
		return err
	}
	conn := raw
	if t.Scheme == "https" {
		cfg := u.c.tls.Clone()
		cfg.ServerName = t.Host
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return err
		}
		conn = tc
	}
	u.raw, u.conn = raw, conn
	u.lr = &io.LimitedReader{R: conn, N: maxHeaderBytes}
	u.br = bufio.NewReader(u.lr)
	u.bw = bufio.NewWriter(conn)
	return nil
}

// idle reports whether a kept connection may carry the next request: an
// upstream that closed it, or sent anything while it sat unused, would
// fail or confuse the next exchange, so egressd dials afresh instead.
func (u *upstreamConn) idle() bool {
	if u.br.Buffered() > 0 {
		return false
	}
	sc, ok := u.raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		quiet = errors.Is(rerr, syscall.EAGAIN)
		return true
	})
	return quiet
}

// done keeps the connection for the next request only if resp's body was
// read to its end, nothing came after it, and neither side asked to close.
// Bytes past a response's end (a body longer than its Content-Length, a
// 204 with a body, a response framed both by length and by chunks) are
// not cleanly framed: read as the next response they would answer a
// request with what the server sent before it was asked, so the
// connection is dropped instead (idle looks again before it is reused).
func (u *upstreamConn) done(resp *http.Response, whole bool) {
	if u.stop != nil && !u.stop() {
		whole = false // the context closed the connection
	}
	u.stop = nil
	if !whole || resp == nil || resp.Close || u.br == nil || u.br.Buffered() > 0 {
		u.drop()
	}
}

// drop closes the connection; the next request dials afresh.
func (u *upstreamConn) drop() {
	if u.stop != nil {
		u.stop()
		u.stop = nil
	}
	if u.conn != nil {
		u.conn.Close()
	}
	u.raw, u.conn, u.lr, u.br, u.bw = nil, nil, nil, nil, nil
}

package mattermost

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
)

// Handler receives what the stream brings, from one goroutine, in order.
type Handler interface {
	// Event is one event, each delivered once, in the server's order.
	Event(ctx context.Context, ev Event)
	// Lost says a reconnect could not resume (the server issued a new
	// connection_id): events since the last one delivered may be missing,
	// and the caller reads them back over REST before Run reads on.
	Lost(ctx context.Context)
}

// Stream follows the event stream of a client's server. Zero durations
// take the defaults named beside them.
type Stream struct {
	Client    *Client
	RetryMin  time.Duration // first reconnect delay; default 1s
	RetryMax  time.Duration // longest reconnect delay; default 30s
	PingEvery time.Duration // how often the connection is proved alive; default 30s

	connID  string // from the last hello
	nextSeq int64  // the seq of the first event not yet delivered
}

// maxEvent bounds one event; post props alone may hold 800,000 runes.
const maxEvent = 8 << 20

// errGap says an event skipped a seq: reconnecting with the last seq makes
// the server replay what was skipped.
var errGap = errors.New("an event was skipped; resuming to have it replayed")

// Run follows the stream until ctx ends, reconnecting with backoff. It
// returns nil when ctx ends, or an error when the server refuses the token.
func (s *Stream) Run(ctx context.Context, h Handler) error {
	bo := Backoff{Min: s.RetryMin, Max: s.RetryMax}
	if bo.Min == 0 {
		bo.Min = time.Second
	}
	if bo.Max == 0 {
		bo.Max = 30 * time.Second
	}
	for {
		err := s.follow(ctx, h, bo.Reset)
		if ctx.Err() != nil {
			return nil
		}
		if IsStatus(err, http.StatusUnauthorized) {
			return fmt.Errorf("event stream: %w", err)
		}
		s.Client.log.Printf("mattermost: event stream: %v; reconnecting", err)
		if bo.Wait(ctx) != nil {
			return nil
		}
	}
}

// follow reads one connection until it fails; healthy runs after each
// event, to reset the reconnect delay.
func (s *Stream) follow(ctx context.Context, h Handler, healthy func()) error {
	conn, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxEvent)
	pingCtx, stop := context.WithCancel(ctx)
	defer stop()
	go s.keepAlive(pingCtx, conn)
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var ev Event
		if typ != websocket.MessageText || json.Unmarshal(data, &ev) != nil || ev.Event == "" {
			continue // a reply to an action, or nothing gatewayd reads
		}
		if err := s.deliver(ctx, ev, h); err != nil {
			return err
		}
		healthy()
	}
}

func (s *Stream) dial(ctx context.Context) (*websocket.Conn, error) {
	u := strings.Replace(s.Client.base, "http", "ws", 1) + "/api/v4/websocket"
	if s.connID != "" {
		u += "?" + url.Values{"connection_id": {s.connID}, "sequence_number": {strconv.FormatInt(s.nextSeq, 10)}}.Encode()
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Authenticating at the upgrade, not by challenge, is what lets the
	// server honour connection_id and resume.
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{
		HTTPClient: s.Client.http,
		HTTPHeader: http.Header{"Authorization": {s.Client.authorization}},
	})
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 1 {
			return nil, &APIError{Method: http.MethodGet, Path: "/api/v4/websocket", Status: resp.StatusCode}
		}
		return nil, fmt.Errorf("connecting the event stream: %w", err)
	}
	return conn, nil
}

// deliver tracks the connection id and seq, and hands the event on once.
func (s *Stream) deliver(ctx context.Context, ev Event, h Handler) error {
	if ev.Event == "hello" {
		id := ev.String("connection_id")
		lost := s.connID != "" && id != s.connID
		s.connID, s.nextSeq = id, 1
		if ev.Seq != nil {
			s.nextSeq = *ev.Seq + 1
		}
		if lost {
			h.Lost(ctx)
		}
		return nil
	}
	if ev.Seq != nil {
		switch seq := *ev.Seq; {
		case seq < s.nextSeq:
			return nil // replayed twice
		case seq > s.nextSeq:
			return errGap
		}
		s.nextSeq++
	}
	h.Event(ctx, ev)
	return nil
}

// keepAlive pings until ctx ends and closes the connection when a pong does
// not come back: a dead TCP connection would otherwise read forever.
func (s *Stream) keepAlive(ctx context.Context, conn *websocket.Conn) {
	every := s.PingEvery
	if every == 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			conn.CloseNow()
			return
		}
	}
}

// Backoff is a growing, jittered delay between tries.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Reset makes the next Wait short again.
func (b *Backoff) Reset() { b.cur = 0 }

// Wait sleeps for the next delay, or until ctx ends.
func (b *Backoff) Wait(ctx context.Context) error {
	b.cur = min(max(b.cur*2, b.Min), b.Max)
	d := b.cur/2 + rand.N(b.cur/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

package mattermost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// Client calls one server's REST API with one bot token.
type Client struct {
	base          string // scheme://host[/path], no trailing slash
	authorization string // "Bearer <token>"; WARNING: goes into headers only
	http          *http.Client
	log           *log.Logger

	// MaxRateWait caps one wait after a 429, whatever the server asks.
	MaxRateWait time.Duration
}

// maxBody bounds what a reply may hold; the largest is a channel's posts.
const maxBody = 16 << 20

// maxRateRetries bounds how often one call waits out a 429.
const maxRateRetries = 8

// New returns a client for the server at base. hc nil takes a client with
// a 30 s timeout that ignores proxy variables: gatewayd talks to the one
// server its config names, and the token must go nowhere else. logger nil
// discards the rate-limit notes.
func New(base, token string, hc *http.Client, logger *log.Logger) *Client {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		hc = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	return &Client{base: strings.TrimRight(base, "/"), authorization: "Bearer " + token, http: hc, log: logger,
		MaxRateWait: time.Minute}
}

// APIError is a reply other than 2xx, with Mattermost's error body when it
// sent one ({id, message, request_id, status_code, is_oauth}).
type APIError struct {
	Method, Path string
	Status       int
	ID           string
	Message      string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s %s: %d", e.Method, e.Path, e.Status)
	if e.ID != "" {
		msg += " " + e.ID
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// IsStatus reports whether err is an APIError with that HTTP status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// IsClientError reports whether err is the server refusing the request
// itself (a 4xx): trying again will not help.
func IsClientError(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status/100 == 4
}

// call sends one request and decodes a 2xx reply into out (when not nil),
// waiting out 429s. It returns the reply's Date, the server's clock.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) (time.Time, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return time.Time{}, err
		}
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, method, path, query, body)
		if err != nil {
			return time.Time{}, err
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %s: %w", method, path, err)
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < maxRateRetries {
			if err := c.waitRateLimit(ctx, method, path, resp.Header); err != nil {
				return time.Time{}, err
			}
			continue
		}
		date, _ := http.ParseTime(resp.Header.Get("Date"))
		if resp.StatusCode/100 != 2 {
			return date, apiError(method, path, resp.StatusCode, data)
		}
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				return date, fmt.Errorf("%s %s: reply: %w", method, path, err)
			}
		}
		return date, nil
	}
}

func (c *Client) send(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", c.authorization)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// url.Error repeats the URL, which holds no secret; the token is
		// only ever in a header.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp, nil
}

func apiError(method, path string, status int, data []byte) error {
	e := &APIError{Method: method, Path: path, Status: status}
	var body struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &body) == nil {
		e.ID, e.Message = body.ID, body.Message
	} else {
		e.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
	}
	return e
}

// waitRateLimit sleeps as long as a 429 asked.
func (c *Client) waitRateLimit(ctx context.Context, method, path string, h http.Header) error {
	d := min(RetryDelay(h, time.Now()), c.MaxRateWait)
	c.log.Printf("mattermost: %s %s: rate limited; retrying in %v", method, path, d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryDelay reads how long a 429 asks to wait: Retry-After in seconds (or
// as an HTTP date), else X-RateLimit-Reset, which the server sends as
// seconds until the reset although the API docs call it an epoch; a value
// that large is taken as one. Neither header: one second.
func RetryDelay(h http.Header, now time.Time) time.Duration {
	const floor = 100 * time.Millisecond
	for _, name := range []string{"Retry-After", "X-Ratelimit-Reset"} {
		v := strings.TrimSpace(h.Get(name))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			if t, err := http.ParseTime(v); err == nil && name == "Retry-After" {
				return max(t.Sub(now), floor)
			}
			continue
		}
		if n > 1_000_000_000 {
			return max(time.Unix(n, 0).Sub(now), floor)
		}
		return max(time.Duration(n)*time.Second, floor)
	}
	return time.Second
}

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/llamadouble"
)

// Parse accepts http or https, a host, and at most a path prefix: no
// credentials (they would sit in a config file), no query, no fragment.
// The path loses its trailing slashes, so that an endpoint's path appends.
func Parse(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("no upstream llama-server: set [infer] upstream = \"http://host:port\", or BOXMAKER_UPSTREAM")
	}
	u, err := url.Parse(raw)
	switch {
	case !strings.Contains(raw, "://"):
		return nil, fmt.Errorf("upstream %q: the scheme must be http or https, as in http://127.0.0.1:8080", raw)
	case err != nil:
		return nil, fmt.Errorf("upstream %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("upstream %q: the scheme must be http or https, as in http://127.0.0.1:8080", raw)
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("upstream %q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("upstream %q: credentials do not belong in the URL", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("upstream %q: a query or fragment means nothing here", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Transport is the one to the upstream: no proxy from the environment, no
// transparent decompression (which would change the bytes), no HTTP/2, and
// no time limit on a response, since prompt processing on a slow machine
// can take minutes before the first byte; the request's context decides.
func Transport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		MaxIdleConns:        32,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
}

// ServeScripted starts the double, with slots slots, on a loopback port for
// as long as ctx lasts and returns its URL. It answers with the script up
// gave in config.ModelScriptEnv (boxmaker up --model-script), else the
// default one. Each role that reaches the upstream serves its own: the
// script's rules match a request's content, not its order.
func ServeScripted(ctx context.Context, slots int) (string, error) {
	script := llamadouble.DefaultScript()
	if text := os.Getenv(config.ModelScriptEnv); text != "" {
		s, err := llamadouble.ParseScript([]byte(text))
		if err != nil {
			return "", fmt.Errorf("the model script (%s): %w", config.ModelScriptEnv, err)
		}
		script = s
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go llamadouble.New(llamadouble.Options{Script: script, Slots: slots, MaxRecorded: scriptedRecorded}).Serve(ctx, ln)
	return "http://" + ln.Addr().String(), nil
}

// FromConfig is the llama-server URL a role reaches: cfg's [infer]
// upstream, or, for the scripted model, a double with slots slots served
// for as long as ctx lasts. Then a line on diag in role's name says that
// what it serves (says: "the replies") comes from a script, so that
// nobody takes it for a language model's.
func FromConfig(ctx context.Context, cfg config.Config, configPath, role, says string, slots int, diag io.Writer) (string, error) {
	up := cfg.Infer.Upstream
	if up == "" {
		return "", fmt.Errorf("no upstream llama-server: set [infer] upstream = \"http://host:port\" in %s, or BOXMAKER_UPSTREAM", configPath)
	}
	if up != config.ScriptedUpstream {
		return up, nil
	}
	up, err := ServeScripted(ctx, slots)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(diag, "%s: SCRIPTED MODEL: %s come from a script (roles/internal/llamadouble), not from a language model\n", role, says)
	return up, nil
}

// scriptedRecorded bounds what the scripted model keeps of the requests it
// answered: nothing reads them under up, and keeping them all grew
// inferproxy by every prompt of every turn (issue 14).
const scriptedRecorded = 8

// maxPropsBytes bounds what is read of /props: its JSON is a few
// kilobytes, the chat template included.
const maxPropsBytes = 1 << 20

// TotalSlots asks the upstream at base how many slots it has (GET /props,
// total_slots). It is asked afresh each time it matters: a restarted
// llama-server may have a different number, and a stale one would let
// llama-server wrap a slot id onto the inspect slot.
func TotalSlots(ctx context.Context, client *http.Client, base *url.URL) (int, error) {
	target := *base
	target.Path += "/props"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("upstream GET /props: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("upstream GET /props: status %d", resp.StatusCode)
	}
	var props struct {
		TotalSlots int `json:"total_slots"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPropsBytes)).Decode(&props); err != nil || props.TotalSlots < 1 {
		return 0, errors.New("the upstream's /props has no total_slots")
	}
	return props.TotalSlots, nil
}

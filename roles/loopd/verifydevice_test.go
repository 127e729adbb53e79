package loopd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/llamadouble"

	"github.com/urfave/cli/v3"
)

// serveDouble serves the scripted model on a loopback port, through wrap
// when it is given, and returns its URL.
func serveDouble(t *testing.T, script string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	s, err := llamadouble.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = llamadouble.New(llamadouble.Options{Script: s})
	if wrap != nil {
		h = wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func verifyScript(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/verify-device.toml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// runVerify runs `boxmaker loopd verify-device ARGS...` and returns the
// exit status and output.
func runVerify(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	p := roles.Program{Version: "test", Roles: []roles.Role{{Name: "loopd", Command: Command}}, Commands: func() []*cli.Command { return nil }}
	var out, errOut bytes.Buffer
	code := p.Run(context.Background(), append([]string{"boxmaker", "loopd", "verify-device"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// The conformance run passes every check against the scripted model, as CI
// runs it to keep `make verify-device` working.
func TestVerifyDeviceScripted(t *testing.T) {
	code, out, errOut := runVerify(t, "--upstream", serveDouble(t, verifyScript(t), nil))
	t.Logf("\n%s", out)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	for _, c := range verifyChecks {
		if !strings.Contains(out, "PASS "+c.name+" ") {
			t.Errorf("no PASS line for %s", c.name)
		}
	}
	if !strings.Contains(out, "verify-device: 9 passed, 0 failed") {
		t.Error("no summary line")
	}
}

// Each check fails when the server does not do what loopd relies on, and
// the run then exits 1 naming how many failed.
func TestVerifyDeviceFailures(t *testing.T) {
	noReasoning := strings.ReplaceAll(verifyScript(t), "reasoning = ", "# reasoning = ")
	cases := []struct {
		name   string
		url    func(t *testing.T) string
		failed []string
		passed []string
	}{
		{"a model without reasoning", func(t *testing.T) string { return serveDouble(t, noReasoning, nil) },
			[]string{"reasoning"}, []string{"streaming", "tool-call", "cache-10-turns", "compaction"}},
		{"a server that loses the cache", func(t *testing.T) string { return serveDouble(t, verifyScript(t), noCachePrompt) },
			[]string{"cache-10-turns", "tool-call"}, []string{"streaming", "slots", "error-body"}},
		{"a server whose slots disagree with /props", func(t *testing.T) string {
			return serveDouble(t, verifyScript(t), rewriteSlots)
		}, []string{"slots"}, []string{"props", "streaming"}},
		{"no server", func(t *testing.T) string { return closedPort(t) },
			[]string{"props", "slots", "streaming", "context-overflow"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runVerify(t, "--upstream", c.url(t), "--timeout", "20s")
			if code != roles.ExitFailed || !strings.Contains(errOut, "checks failed") {
				t.Errorf("status %d, stderr %q", code, errOut)
			}
			for _, name := range c.failed {
				if !strings.Contains(out, "FAIL "+name+" ") {
					t.Errorf("%s did not fail:\n%s", name, out)
				}
			}
			for _, name := range c.passed {
				if !strings.Contains(out, "PASS "+name+" ") {
					t.Errorf("%s did not pass:\n%s", name, out)
				}
			}
		})
	}
}

// noCachePrompt makes every chat request ask for no prompt cache, as a
// server that loses it would answer.
func noCachePrompt(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/chat/completions" && json.Unmarshal(data, &body) == nil {
			body["cache_prompt"] = false
			data, _ = json.Marshal(body)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
		h.ServeHTTP(w, r)
	})
}

// rewriteSlots answers /slots with one slot of another n_ctx.
func rewriteSlots(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slots" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"id":0,"n_ctx":4096}]`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// What the model writes reaches the terminal escaped: a reply with escape
// sequences shows them as \x1b, never as themselves.
func TestVerifyDeviceEscapesTheModel(t *testing.T) {
	hostile := strings.Replace(verifyScript(t), `content = "(scripted) You said: ${said}"`,
		`content = "\u001b[2J\u001b]0;owned\u0007 cleared \u202e"`, 1)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := VerifyDevice(ctx, serveDouble(t, hostile, nil), 20*time.Second, verifyTokens, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07\u202e") || !strings.Contains(out.String(), `\x1b[2J`) {
		t.Errorf("the model's text reached the output unescaped:\n%q", out.String())
	}
}

// A wrong command line is a usage error (status 2) that names the flag.
func TestVerifyDeviceUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--upstream", "ftp://127.0.0.1:8080"},
		{"--upstream", "http://127.0.0.1:8080/?x=1"},
		{"--upstream", "http://user@127.0.0.1:8080"},
		{"--upstream", "127.0.0.1:8080"},
		{"--upstream", "http://127.0.0.1:8080", "extra"},
	} {
		code, out, errOut := runVerify(t, args...)
		if code != roles.ExitUsage || !strings.Contains(errOut, "upstream") && !strings.Contains(errOut, "arguments") {
			t.Errorf("%q: status %d, stderr %q", args, code, errOut)
		}
		if strings.Contains(out, "PASS") || strings.Contains(out, "FAIL") {
			t.Errorf("%q ran checks:\n%s", args, out)
		}
	}
}

// An upstream with a path prefix, as [infer] upstream allows (a server
// behind a reverse proxy), is asked under that prefix.
func TestVerifyDevicePathPrefix(t *testing.T) {
	under := func(h http.Handler) http.Handler { return http.StripPrefix("/llama", h) }
	code, out, errOut := runVerify(t, "--upstream", serveDouble(t, verifyScript(t), under)+"/llama/")
	if code != 0 || !strings.Contains(out, "9 passed, 0 failed") {
		t.Errorf("status %d\n%s%s", code, out, errOut)
	}
}

// A server that takes the connection and never answers fails each check
// within --timeout, the first one too; each check is named as it starts,
// and the failure names the server's address, not infer.sock.
func TestVerifyDeviceBoundsEveryCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(hang); srv.Close() })
	start := time.Now()
	code, out, _ := runVerify(t, "--upstream", "http://"+ln.Addr().String(), "--timeout", "300ms")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("verify-device took %s against a hanging server with --timeout 300ms", took)
	}
	if code != roles.ExitFailed || !strings.Contains(out, "...  props\nFAIL props") || !strings.Contains(out, "no answer within --timeout 300ms") {
		t.Errorf("status %d\n%s", code, out)
	}
	dead := runVerifyDead(t)
	if strings.Contains(dead, "infer.sock") || !strings.Contains(dead, "the model server at http://127.0.0.1:9 is not reachable") {
		t.Errorf("a refused TCP dial is blamed wrongly:\n%s", dead)
	}
}

func runVerifyDead(t *testing.T) string {
	_, out, _ := runVerify(t, "--upstream", "http://127.0.0.1:9", "--timeout", "2s")
	return out
}

// The tool-call check asks the server for one call (parallel_tool_calls
// false) on its forced step alone: llama-server's grammar for parallel calls
// lets a model that never ends its turn repeat the call until max_tokens
// (Gemma 3 270M, issue 26). Every other request leaves it to the server, as
// loopd's turns do.
func TestVerifyDeviceAsksForOneCall(t *testing.T) {
	var mu sync.Mutex
	var forced, others, single, unset int
	upstream := serveDouble(t, verifyScript(t), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req struct {
				ToolChoice string `json:"tool_choice"`
				Parallel   *bool  `json:"parallel_tool_calls"`
			}
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == "/v1/chat/completions" && json.Unmarshal(body, &req) == nil {
				if req.ToolChoice == "required" {
					forced++
					if req.Parallel != nil && !*req.Parallel {
						single++
					}
				} else {
					others++
					if req.Parallel == nil {
						unset++
					}
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	if code, out, errOut := runVerify(t, "--upstream", upstream); code != 0 {
		t.Fatalf("status %d\n%s\n%s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if forced != 1 || single != 1 || others == 0 || unset != others {
		t.Errorf("%d forced requests, %d of them asking for one call; %d others, %d leaving it unset", forced, single, others, unset)
	}
}

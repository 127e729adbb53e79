package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/wire"
)

// The real-model tests (issue 26) run against a real llama-server serving
// Gemma 3 270M, set up by scripts/llama.sh: `make real-model-test` installs
// both, starts the server and runs them with BOXMAKER_REAL_MODEL set to its
// URL. `make test` leaves the variable unset, and they skip.

// realModelEnv names the variable that gives the server: its URL, or the
// install's "no registry: ..." message when PyPI could not be reached.
const realModelEnv = "BOXMAKER_REAL_MODEL"

// realModel returns the llama-server's base URL once it answers /health,
// or skips t: for want of the variable, or for want of the registry alone.
func realModel(t *testing.T) string {
	t.Helper()
	v := os.Getenv(realModelEnv)
	switch {
	case v == "":
		require.Elsewhere(t, "no real model server; `make real-model-test` runs this ("+realModelEnv+"=http://127.0.0.1:PORT)")
	case strings.HasPrefix(v, "no registry:"):
		require.Lacking(t, "llama", "llama-server and the model could not be installed: "+v)
	}
	base := strings.TrimRight(v, "/")
	var health struct{ Status string }
	if err := getJSON(base+"/health", &health); err != nil || health.Status != "ok" {
		t.Fatalf("%s=%s does not answer /health ok: %v %+v", realModelEnv, v, err, health)
	}
	return base
}

// directClient is the tests' own client of the server: a connection per
// request, since llama-server closes a kept-alive connection after a stream
// and a POST sent on it at that moment gets EOF (docs/decisions.md).
var directClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func getJSON(url string, v any) error {
	resp, err := directClient.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func postJSON(url string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := directClient.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, body)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// renderedTurns is how many turns the server opens and closes in the
// prompt it renders from body, a chat request: its own template
// (POST /apply-template) and its own tokenizer with special tokens parsed
// (POST /tokenize), as a completion request is rendered and tokenized.
func renderedTurns(t *testing.T, base string, body []byte) (starts, ends int, prompt string) {
	t.Helper()
	var rendered struct{ Prompt string }
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if err := postJSON(base+"/apply-template", req, &rendered); err != nil {
		t.Fatal(err)
	}
	tokens := func(text string) []int {
		var out struct{ Tokens []int }
		if err := postJSON(base+"/tokenize", map[string]any{"content": text, "add_special": false, "parse_special": true}, &out); err != nil {
			t.Fatal(err)
		}
		return out.Tokens
	}
	start, end := tokens("<start_of_turn>"), tokens("<end_of_turn>")
	if len(start) != 1 || len(end) != 1 {
		t.Fatalf("the model's turn markers are not single tokens: %v %v", start, end)
	}
	for _, tok := range tokens(rendered.Prompt) {
		switch tok {
		case start[0]:
			starts++
		case end[0]:
			ends++
		}
	}
	return starts, ends, rendered.Prompt
}

// callMark in an owner's message, "[call N]", stands for a capable model's
// judgement that the next N steps of the turn call a tool.
var callMark = regexp.MustCompile(`\[call ([0-9])\]`)

// modelTap is toolChoiceProxy's record of the server's answers: the
// timings of each chat reply, in order.
type modelTap struct {
	mu       sync.Mutex
	timings  []replyTimings
	requests [][]byte // the chat requests as loopd sent them
}

// lastRequest is the last chat request loopd sent, before tool_choice.
func (tap *modelTap) lastRequest() []byte {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return tap.requests[len(tap.requests)-1]
}

// replyTimings is what llama-server says of one reply's prompt.
type replyTimings struct {
	CacheN     uint64 `json:"cache_n"`
	PromptN    uint64 `json:"prompt_n"`
	PredictedN uint64 `json:"predicted_n"`
}

func (tap *modelTap) all() []replyTimings {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return slices.Clone(tap.timings)
}

// forcedTokens caps a reply that must call a tool: the 270M model first
// copies the start of its prompt, up to the tools' "reply with
// <tool_call>", then calls.
const forcedTokens = 160

// toolChoiceProxy serves in front of the real server and changes one thing
// in a chat request that offers tools: it adds tool_choice, "required"
// (with parallel_tool_calls false and max_tokens forcedTokens) while the
// owner's last message asks for more calls by its callMark, and "none"
// otherwise. A 270M model never decides to call a tool by itself; with
// "required" the server holds its output to the tool-call grammar and
// parses the calls from it, which is what the tests need of it. With
// parallel_tool_calls false that grammar (fixtures/llama/gemma3-tools.jinja
// wraps a step's calls in one <tool_call> section) ends after one call, and
// the grammar's end lets only an end of turn follow, so the base model,
// which never ends a turn by itself, ends this one. With "none" it stops
// the reply at "<tool_call>": the base model copies its prompt, tools
// section and earlier calls included, into a text reply, and loopd rightly
// neutralises the markers in it when it replays the reply; the model's
// next forced call then copies the neutralised "<\u200dtool_call>", which
// the grammar takes as text, and runs to max_tokens without a call (seen in
// the inspect subtest). A capable model writes no call as text. The
// rendered prompt depends on none of these options, so the cache is
// untouched. Everything
// else passes byte for byte, streams included; the tap reads the replies'
// timings on the way.
func toolChoiceProxy(t *testing.T, base string) (string, *modelTap) {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	tap := &modelTap{}
	rp := &httputil.ReverseProxy{FlushInterval: -1}
	rp.Rewrite = func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		r := pr.Out
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Body == nil {
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		tap.mu.Lock()
		tap.requests = append(tap.requests, slices.Clone(body))
		tap.mu.Unlock()
		switch toolChoiceFor(body) {
		case "required":
			body = append([]byte(`{"tool_choice":"required","parallel_tool_calls":false,"max_tokens":`+strconv.Itoa(forcedTokens)+`,`), body[1:]...)
		case "none":
			body = append([]byte(`{"tool_choice":"none","stop":["<tool_call>"],`), body[1:]...)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path == "/v1/chat/completions" {
			resp.Body = &tapReader{ReadCloser: resp.Body, tap: tap}
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, tap
}

// tapReader passes a reply through and keeps the timings of its last
// event that has them, as loopd reads them: with a stop string, llama-server
// sends timings on the chunk before the last one too.
type tapReader struct {
	io.ReadCloser
	tap  *modelTap
	line []byte
	at   int // the reply's place in tap.timings, once it has one; 0 before
}

func (r *tapReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			r.line = append(r.line, c)
			continue
		}
		var ev struct {
			Timings *replyTimings `json:"timings"`
		}
		if data, ok := bytes.CutPrefix(r.line, []byte("data: ")); ok && json.Unmarshal(data, &ev) == nil && ev.Timings != nil {
			r.tap.mu.Lock()
			if r.at == 0 {
				r.tap.timings = append(r.tap.timings, replyTimings{})
				r.at = len(r.tap.timings)
			}
			r.tap.timings[r.at-1] = *ev.Timings
			r.tap.mu.Unlock()
		}
		r.line = r.line[:0]
	}
	return n, err
}

// toolChoiceFor is the tool_choice to add to body, or "" to leave it as it
// is (no tools offered, or a choice already made).
func toolChoiceFor(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
		Tools      []json.RawMessage `json:"tools"`
		ToolChoice *string           `json:"tool_choice"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Tools) == 0 || req.ToolChoice != nil || len(body) < 2 || body[0] != '{' {
		return ""
	}
	calls := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		switch {
		case m.Role == "tool":
			calls++
		case m.Role == "user" && m.Content != nil:
			if mark := callMark.FindStringSubmatch(*m.Content); mark != nil {
				if n, _ := strconv.Atoi(mark[1]); calls < n {
					return "required"
				}
			}
			return "none"
		}
	}
	return "none"
}

// realTurn is one turn as it came over loop.sock.
type realTurn struct {
	session wire.SessionID
	deltas  []string
	calls   []wire.ToolCallEvent
	results []wire.ToolResultEvent
	content string
	took    time.Duration
}

// sayReal sends content on loop.sock as `boxmaker chat` does and reads
// the turn's events to its end; a turn that fails fails the test.
func (s *stack) sayReal(session *wire.SessionID, content string) realTurn {
	s.t.Helper()
	t, failed := s.trySayReal(session, content)
	if failed != "" {
		s.t.Fatalf("the turn %q failed: %s\nup's log:\n%s", content, failed, s.log)
	}
	return t
}

// trySayReal is sayReal that returns why the turn failed, if it did.
func (s *stack) trySayReal(session *wire.SessionID, content string) (realTurn, string) {
	s.t.Helper()
	c, err := net.Dial("unix", filepath.Join(s.home, "run", "bxctl-loopd", "loop.sock"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(5 * time.Minute))
	if err := wire.WriteEnvelope(c, wire.Envelope{ID: 1, Final: true, Msg: wire.ChatSend{Session: session, Content: content}}); err != nil {
		s.t.Fatal(err)
	}
	var t realTurn
	for {
		e, err := wire.ReadEnvelope(c)
		if err != nil {
			s.t.Fatalf("the turn %q: %v\nup's log:\n%s", content, err, s.log)
		}
		switch m := e.Msg.(type) {
		case wire.SessionEvent:
			t.session = m.Session
		case wire.Delta:
			t.deltas = append(t.deltas, m.Text)
		case wire.ToolCallEvent:
			t.calls = append(t.calls, m)
		case wire.ToolResultEvent:
			t.results = append(t.results, m)
		case wire.ChatDone:
			t.session, t.content, t.took = m.Session, m.Content, time.Since(start)
			return t, ""
		case wire.WireError:
			return t, fmt.Sprintf("%s: %s", m.Code, m.Detail)
		}
		if e.Final {
			s.t.Fatalf("the turn %q ended with %s", content, wire.KindOf(e.Msg))
		}
	}
}

// records reads a session's epoch file.
func (s *stack) records(session wire.SessionID, epoch int) []wire.LogRecord {
	s.t.Helper()
	f, err := os.Open(filepath.Join(s.home, "sessions", session.String(), fmt.Sprintf("%d.jsonl", epoch)))
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	var out []wire.LogRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		r, err := wire.DecodeLogRecord(sc.Bytes())
		if err != nil {
			s.t.Fatalf("%s epoch %d: %v", session, epoch, err)
		}
		out = append(out, r)
	}
	return out
}

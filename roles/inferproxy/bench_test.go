package inferproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/llamadouble"
)

// Each benchmark runs the same work directly against the upstream and
// through inferproxy, side by side in one run, so that the difference is
// what inferproxy adds: run with -bench . and compare the pairs.

type route struct {
	name   string
	client *http.Client
	base   string
}

// routes are the direct path to upstream and the path through inferproxy.
func routes(b *testing.B, upstream string) []route {
	h := startProxy(b, upstream, Options{Log: log.New(io.Discard, "", 0)})
	return []route{{"direct", directClient(), upstream}, {"inferproxy", h.client, "http://infer.sock"}}
}

func fetch(b *testing.B, c *http.Client, method, url, body string) int64 {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return n
}

// BenchmarkHealth is the added latency of one small request: the upstream
// does nothing, so the whole difference is inferproxy's hop.
func BenchmarkHealth(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, `{"status":"ok"}`)
	}))
	defer up.Close()
	for _, r := range routes(b, up.URL) {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				fetch(b, r.client, "GET", r.base+"/health", "")
			}
		})
	}
}

// BenchmarkChat is one non-streaming chat completion answered by the
// scripted llama-server, which renders, tokenizes and answers like the
// real one but without a model's cost.
func BenchmarkChat(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go llamadouble.New(llamadouble.Options{}).Serve(ctx, ln)
	body := `{"messages":[{"role":"system","content":"You are boxmaker."},{"role":"user","content":"hello"}],"cache_prompt":true,"id_slot":0}`
	for _, r := range routes(b, "http://"+ln.Addr().String()) {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				fetch(b, r.client, "POST", r.base+"/v1/chat/completions", body)
			}
		})
	}
}

// BenchmarkStream is the throughput of a streamed reply: 1000 SSE events
// of a token each, flushed one by one as llama-server sends them, as fast
// as they go; 50 events 1 ms apart, a model at 1000 tokens a second (local
// models make 20 to 100), where the hop's cost shows as a real reply would
// see it; and a 10 MB body, for the bulk rate.
func BenchmarkStream(b *testing.B) {
	event := []byte(`data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":" token"}}],"created":1,"id":"chatcmpl-x","object":"chat.completion.chunk"}` + "\n\n")
	bulk := bytes.Repeat([]byte("x"), 10<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Path == "/tokenize" {
			w.Write(bulk)
			return
		}
		rc := http.NewResponseController(w)
		n, pace := 1000, time.Duration(0)
		if r.URL.Path == "/props" {
			n, pace = 50, time.Millisecond
		}
		for range n {
			time.Sleep(pace)
			w.Write(event)
			rc.Flush()
		}
	}))
	defer up.Close()
	for _, kind := range []struct {
		name, method, path string
		size               int64
	}{
		{"events", "POST", "/v1/chat/completions", int64(len(event)) * 1000},
		{"paced", "GET", "/props", int64(len(event)) * 50},
		{"10MB", "POST", "/tokenize", int64(len(bulk))},
	} {
		for _, r := range routes(b, up.URL) {
			b.Run(fmt.Sprintf("%s/%s", kind.name, r.name), func(b *testing.B) {
				b.SetBytes(kind.size)
				for b.Loop() {
					if n := fetch(b, r.client, kind.method, r.base+kind.path, "{}"); n != kind.size {
						b.Fatalf("got %d bytes of %d", n, kind.size)
					}
				}
			})
		}
	}
}

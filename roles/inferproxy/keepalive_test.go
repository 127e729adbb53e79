package inferproxy

import (
	"bufio"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestAStreamAfterAStreamIsForwarded: llama-server (the 11434 build of
// issue 26) answers a streamed chat with "Keep-Alive: timeout=5" and then
// closes the connection. A transport that reuses it sends the next POST
// into a closed socket and gets EOF, which inferproxy must not turn into a
// 502 for loopd's next step. This upstream does the same, byte for byte as
// that build, and drops the connection the moment the next request arrives
// on it, which the real server's close does at random.
func TestAStreamAfterAStreamIsForwarded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				event := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
				io.WriteString(c, strconv.FormatInt(int64(len(event)), 16)+"\r\n"+event+"\r\n0\r\n\r\n")
				// and closes, as llama-server does after a stream. Closing
				// once the next request has arrived makes the race certain:
				// that request was written into a connection the server
				// then drops without an answer.
				c.Read(make([]byte, 1))
			}()
		}
	}()
	h := startProxy(t, "http://"+ln.Addr().String(), Options{Log: log.New(io.Discard, "", 0)})
	for i := range 20 {
		resp, err := h.client.Post("http://infer.sock/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
			t.Fatalf("request %d: status %d: %s", i+1, resp.StatusCode, body)
		}
	}
}

package wire

import (
	"bufio"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

func typicalRequest(b *testing.B) Envelope {
	s, err := ParseSessionID("chat-2026-09-17")
	if err != nil {
		b.Fatal(err)
	}
	return Envelope{ID: 7, Final: true, Msg: ToolRequest{Session: s, Call: 12, Tool: "http_fetch",
		Arguments: `{"url":"https://docs.python.org/3/library/json.html"}`}}
}

// result64K is a 64 KiB page of mixed text, the size a fetch result often has.
func result64K() Envelope {
	line := "Tom & Jerry <b>café</b> \"quoted\"\ttab 😀 plain words of a fetched page\n"
	content := strings.Repeat(line, 64*1024/len(line)+1)[:64*1024]
	return Envelope{ID: 7, Final: true, Msg: Result{Content: content, Class: Public, Untrusted: true}}
}

func benchEncode(b *testing.B, e Envelope) {
	out, err := Encode(e)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecode(b *testing.B, e Envelope) {
	payload, err := Encode(e)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeToolRequest(b *testing.B) { benchEncode(b, typicalRequest(b)) }
func BenchmarkDecodeToolRequest(b *testing.B) { benchDecode(b, typicalRequest(b)) }
func BenchmarkEncodeResult64K(b *testing.B)   { benchEncode(b, result64K()) }
func BenchmarkDecodeResult64K(b *testing.B)   { benchDecode(b, result64K()) }

// socketPair returns the two ends of a connected AF_UNIX stream socketpair.
func socketPair(b *testing.B) (net.Conn, net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// BenchmarkRoundTripUnix is one tool_request and its result over a real
// socketpair: encode, frame, write, read, decode on each side.
func BenchmarkRoundTripUnix(b *testing.B) {
	client, server := socketPair(b)
	defer client.Close()
	reply := Envelope{Final: true, Msg: Result{Content: "Example Domain\n", Class: Public, Untrusted: true}}
	go func() {
		defer server.Close()
		r := bufio.NewReader(server)
		for {
			req, err := ReadEnvelope(r)
			if err != nil {
				return
			}
			reply.ID = req.ID
			if WriteEnvelope(server, reply) != nil {
				return
			}
		}
	}()
	req := typicalRequest(b)
	r := bufio.NewReader(client)
	b.ReportAllocs()
	for b.Loop() {
		req.ID++
		if err := WriteEnvelope(client, req); err != nil {
			b.Fatal(err)
		}
		resp, err := ReadEnvelope(r)
		if err != nil || resp.ID != req.ID {
			b.Fatalf("reply %+v, %v", resp, err)
		}
	}
}

// toolList is the tool_list_result loopd decodes on every turn: every
// tool, with its description and its schema as a string.
func toolList() Envelope {
	res := ToolListResult{Tools: []ToolSpec{}}
	for _, t := range Tools() {
		res.Tools = append(res.Tools, ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	return Envelope{ID: 7, Final: true, Msg: res}
}

func BenchmarkEncodeToolList(b *testing.B) { benchEncode(b, toolList()) }
func BenchmarkDecodeToolList(b *testing.B) { benchDecode(b, toolList()) }

package loopd

import (
	"context"
	"testing"

	"boxmaker/roles/internal/llamadouble"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// benchTurns runs b.N turns of msg over one connection, starting a fresh
// session every 10 turns so that the replayed history stays the size of a
// short conversation. The double answers at once, so the time is loopd's
// own: the socket, replaying the session, parsing the stream, the log's
// fsync, and brokerd for a tool call.
func benchTurns(b *testing.B, msg string) {
	e := newEnv(b, envOptions{script: benchScript})
	c, err := sock.Dial(e.socket("bxctl", "loopd"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var session *wire.SessionID
	n := 0
	for b.Loop() {
		if n%10 == 0 {
			session = nil
		}
		n++
		res, err := c.Call(ctx, wire.ChatSend{Session: session, Content: msg}, nil)
		if err != nil {
			b.Fatal(err)
		}
		id := res.(wire.ChatDone).Session
		session = &id
	}
}

var benchScript = []llamadouble.Rule{
	{Match: `^call$`, ToolCalls: call("shell", `{"command":"rm -rf /"}`)},
	{Role: "tool", Content: "It was denied."},
	{Content: "Fine."},
}

// BenchmarkTurn is a turn without tools: one model request and one fsync.
func BenchmarkTurn(b *testing.B) { benchTurns(b, "hello") }

// BenchmarkToolTurn is a turn with one call that brokerd denies (no grant:
// decided and audited, no sandbox): two model requests and three fsyncs
// here, one in brokerd.
func BenchmarkToolTurn(b *testing.B) { benchTurns(b, "call") }

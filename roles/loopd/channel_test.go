package loopd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// rawExchange writes raw bytes to loop.sock and returns every envelope
// until loopd closes the connection.
func rawExchange(t *testing.T, path string, raw []byte) []wire.Envelope {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	var got []wire.Envelope
	r := bufio.NewReader(c)
	for {
		e, err := wire.ReadEnvelope(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("reading replies: %v", err)
			}
			return got
		}
		got = append(got, e)
	}
}

func framed(payload string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// TestBadInputOnLoopSock: each kind of bad input gets its error frame, and
// the session's log is untouched by all of them.
func TestBadInputOnLoopSock(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "read note todo.md").done.Session.String()
	logPath := filepath.Join(e.home, "sessions", s, "1.jsonl")
	before, _ := os.ReadFile(logPath)
	for _, c := range []struct {
		name string
		raw  []byte
		code wire.ErrorCode
		says string
	}{
		{"empty frame", []byte{0, 0, 0, 0}, wire.BadFrame, ""},
		{"oversized frame", []byte{0x7f, 0, 0, 0}, wire.BadFrame, ""},
		{"not json", framed("chat_send please"), wire.BadMessage, ""},
		{"unknown kind", framed(`{"v":1,"id":5,"final":true,"msg":{"kind":"shout","body":{}}}`), wire.BadMessage, `unknown kind "shout"`},
		{"approval answer", framed(`{"v":1,"id":6,"final":true,"msg":{"kind":"approval_answer","body":{"approval":"ap-1","approve":true}}}`), wire.BadMessage, "approval_answer is not accepted"},
		{"approval decision", framed(`{"v":1,"id":7,"final":true,"msg":{"kind":"approval_decision","body":{"approval":"ap-1","approve":true,"approver":"mm:x","post":"p"}}}`), wire.BadMessage, "approval_decision is not accepted"},
		{"tool request", framed(`{"v":1,"id":8,"final":true,"msg":{"kind":"tool_request","body":{"session":"` + s + `","call":9,"tool":"shell","arguments":"{}"}}}`), wire.BadMessage, "tool_request is not accepted"},
		{"unknown field", framed(`{"v":1,"id":9,"final":true,"msg":{"kind":"chat_send","body":{"session":null,"content":"hi","approve":true}}}`), wire.BadMessage, ""},
	} {
		got := rawExchange(t, e.socket("bxctl", "loopd"), c.raw)
		if len(got) != 1 {
			t.Errorf("%s: %d replies, want one error", c.name, len(got))
			continue
		}
		werr, ok := got[0].Msg.(wire.WireError)
		if !ok || werr.Code != c.code || !strings.Contains(werr.Detail, c.says) {
			t.Errorf("%s: got %#v, want %s saying %q", c.name, got[0].Msg, c.code, c.says)
		}
	}
	checkRequestErrors(t, e, s)
	if after, _ := os.ReadFile(logPath); string(after) != string(before) {
		t.Errorf("the log changed:\n%s\n%s", before, after)
	}
	e.mustChat(s, "still there?")
}

// checkRequestErrors sends valid frames loopd refuses to carry out: each
// is answered with an error and the connection stays usable.
func checkRequestErrors(t *testing.T, e *env, s string) {
	t.Helper()
	c, err := sock.Dial(e.socket("gatewayd", "loopd"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := sessionID(t, s)
	for _, m := range []struct {
		msg  wire.Message
		says string
	}{
		{wire.ChatSend{Session: &id, Content: ""}, "content is empty"},
		{wire.SessionLog{Session: sessionID(t, "no-such-session")}, "no session named no-such-session"},
	} {
		_, err := c.Call(ctx, m.msg, nil)
		if wire.CodeOf(err) != wire.BadMessage || !strings.Contains(err.Error(), m.says) {
			t.Errorf("%s: got %v, want bad_message saying %q", wire.KindOf(m.msg), err, m.says)
		}
	}
	if _, err := c.Call(ctx, wire.SessionList{}, nil); err != nil {
		t.Errorf("the connection did not survive the errors: %v", err)
	}
}

// TestNamedSessions: gatewayd names a session per thread; an unknown name
// starts it, a known one resumes it.
func TestNamedSessions(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	if got := e.mustChatVia("gatewayd", "mm-thread-1", "hello").done.Session.String(); got != "mm-thread-1" {
		t.Fatalf("session %s", got)
	}
	e.mustChatVia("gatewayd", "mm-thread-1", "again")
	e.mustChatVia("gatewayd", "mm-thread-2", "hello")
	if got := kinds(e.readLog("mm-thread-1", 1)); got != "start user assistant user assistant" {
		t.Errorf("log %s", got)
	}
	starts := []wire.SessionStart{e.readLog("mm-thread-1", 1)[0].(wire.SessionStart), e.readLog("mm-thread-2", 1)[0].(wire.SessionStart)}
	if starts[0].Slot != 0 || starts[1].Slot != 0 {
		t.Errorf("slots %d %d on a one-slot server", starts[0].Slot, starts[1].Slot)
	}
}

// TestOwnerResumesOnly: through the owner's socket a name resumes a
// session that exists; a name no session has (a typo) is an error naming
// it, and starts nothing. A new session comes only without a name.
func TestOwnerResumesOnly(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "hello").done.Session.String()
	e.mustChat(s, "again")
	typo := s[:len(s)-1] + "x"
	out := e.chat(typo, "hello", nil)
	if wire.CodeOf(out.err) != wire.BadMessage || !strings.Contains(out.err.Error(), "no session named "+typo+" (`boxmaker sessions` lists them)") {
		t.Fatalf("a mistyped name: %v", out.err)
	}
	if len(out.events) > 0 {
		t.Errorf("a mistyped name got events: %v", out.events)
	}
	if _, err := os.Stat(filepath.Join(e.home, "sessions", typo)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a mistyped name left a session directory: %v", err)
	}
	e.mustChatVia("gatewayd", "mm-thread", "hello")
	if got := e.mustChat("mm-thread", "the owner may resume it").done.Session.String(); got != "mm-thread" {
		t.Errorf("resumed %s", got)
	}
}

// TestSlotsAreShared: sessions spread over the server's slots, all but
// inspect's, the last by default (issue 23), which inferproxy refuses.
func TestSlotsAreShared(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, slots: 3})
	var slots []uint32
	for range 4 {
		s := e.mustChat("", "hello").done.Session.String()
		slots = append(slots, e.readLog(s, 1)[0].(wire.SessionStart).Slot)
	}
	if !slices.Equal(slots, []uint32{0, 1, 0, 1}) {
		t.Errorf("slots %v, want 0 1 0 1", slots)
	}
}

// A session whose slot is inspect's, or past the server's slots, names
// another in its requests: inferproxy would refuse it.
func TestChatSlotAvoidsInspectsOwn(t *testing.T) {
	last := config.Inspect{Slot: -1}
	for _, c := range []struct {
		slot, slots uint32
		inspect     config.Inspect
		want        uint32
	}{
		{0, 3, last, 0}, {1, 3, last, 1}, {2, 3, last, 0}, {4, 3, last, 1}, {5, 3, last, 0},
		{0, 1, last, 0}, {0, 3, config.Inspect{Slot: 0}, 1}, {2, 3, config.Inspect{Slot: 0}, 2},
	} {
		if got := chatSlot(c.slot, c.slots, c.inspect); got != c.want {
			t.Errorf("chatSlot(%d of %d, [inspect] slot %d) = %d, want %d", c.slot, c.slots, c.inspect.Slot, got, c.want)
		}
	}
}

// TestBadLoopConfigRefusesToStart: a [loop] value out of range stops loopd
// before it listens, naming the key.
func TestBadLoopConfigRefusesToStart(t *testing.T) {
	for text, want := range map[string]string{
		"[loop]\ncompact_at = 1.5\n":        "loop.compact_at must lie between 0 and 1",
		"[loop]\nmax_steps = 0\n":           "loop.max_steps must be positive",
		"[loop]\ncompact_when = 1\n":        "unknown key loop.compact_when",
		"[loop]\nrequest_timeout = 5":       `"5" is not a duration`,
		"[loop]\nrequest_timeout = \"5ms\"": "loop.request_timeout must be at least 1s",
	} {
		home := t.TempDir()
		os.MkdirAll(filepath.Join(home, "etc"), 0o755)
		os.WriteFile(filepath.Join(home, "etc", "config.toml"), []byte(text), 0o644)
		e := &env{t: t, home: home}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := Main(ctx, Options{Paths: e.paths()}) // serves until ctx ends if the config is taken
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
}

// TestConcurrentTurns: sessions created side by side get a slot each and
// keep their caches, and messages to one session take turns rather than
// interleave.
func TestConcurrentTurns(t *testing.T) {
	// Three sessions, three slots for them, and inspect's, the last.
	e := newEnv(t, envOptions{script: toolScript, slots: 4})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		name := []string{"shared", "other-a", "other-b", "shared"}[i%4]
		wg.Go(func() {
			if out := e.chatVia("gatewayd", name, "read note todo.md", nil); out.err != nil {
				errs <- out.err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := strings.TrimSpace(strings.Repeat(" user assistant result assistant", 4))
	if got := kinds(e.readLog("shared", 1)); got != "start "+want {
		t.Errorf("shared: %s", got)
	}
	var ids []wire.CallID
	for _, r := range e.readLog("shared", 1) {
		if r, ok := r.(wire.ToolResult); ok {
			ids = append(ids, r.Call)
		}
	}
	if !slices.Equal(ids, []wire.CallID{1, 2, 3, 4}) {
		t.Errorf("call ids %v", ids)
	}
}

// loop.sock answers exactly the kinds the role table lets through its
// sockets: none the gate passes falls to "internal", and no row serves a
// kind no socket accepts (Route keeps each socket to its own at start).
func TestEveryLoopKindHasItsRow(t *testing.T) {
	l := &loopd{}
	for _, pair := range roles.ListensOn("loopd") {
		if err := sock.CheckKinds(sock.Accepted("", "loopd"), l.kindsFor(pair.Client)); err != nil {
			t.Errorf("%s-loopd: %v", pair.Client, err)
		}
	}
}

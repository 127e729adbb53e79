package bxctl

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"boxmaker/roles"
	"boxmaker/wire"
)

// runWith is run with stdin as the command's standard input.
func runWith(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	p := roles.Program{Version: "test", Roles: []roles.Role{{Name: "bxctl", Command: Command}}, Commands: Commands, Stdin: stdin}
	var out, errOut bytes.Buffer
	code := p.Run(context.Background(), append([]string{"boxmaker"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestChatRefusesWhatItCannotSend: a message past the limit is refused
// whole, saying the limit, never cut and sent in part; so is one that is
// not UTF-8. Neither needs loopd to be told.
func TestChatRefusesWhatItCannotSend(t *testing.T) {
	home := t.TempDir()
	big := strings.Repeat("é", maxMessage/2) + "x" // one byte over, the cut would fall inside a character
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"stdin over the limit", big, nil, "the message on standard input is over 512 KiB, the most one message may hold"},
		{"--message over the limit", "", []string{"--message", big}, "over 512 KiB, the most one message may hold"},
		{"stdin not UTF-8", "caf\xe9 au lait", nil, "not valid UTF-8 (at byte 3)"},
		{"an empty message", " \n", nil, "the message is empty"},
	} {
		code, out, errOut := runWith(t, strings.NewReader(c.stdin), append([]string{"chat", "--home", home}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want status 2 saying %q", c.name, code, out, errOut, c.want)
		}
	}
	code, _, errOut := runWith(t, strings.NewReader(strings.Repeat("a", maxMessage)), "chat", "--home", home)
	if code != 1 || !strings.Contains(errOut, "loopd is not answering") {
		t.Errorf("a message of exactly the limit: status %d %q; want it sent (and loopd not found)", code, errOut)
	}
}

// oneTurn answers a chat_send with one call whose outcome the message
// names ("result", "denied" or "failed"), then the reply.
func oneTurn(m wire.Message) []wire.Message {
	send, ok := m.(wire.ChatSend)
	if !ok {
		return []wire.Message{wire.WireError{Code: wire.BadMessage, Detail: "unexpected"}}
	}
	s, _ := wire.ParseSessionID("chat-1")
	return []wire.Message{
		wire.SessionEvent{Session: s},
		wire.ToolCallEvent{Call: 1, Tool: "notes_read", Arguments: `{"path":"notes/x.md"}`},
		wire.ToolResultEvent{Call: 1, Outcome: send.Content, Detail: "why: " + send.Content},
		wire.ChatDone{Session: s, Content: "the reply"},
	}
}

// TestChatStatusSaysWhetherCallsRan: a one-shot chat whose call was denied
// or failed prints the reply and exits 1 naming the call; one whose calls
// ran exits 0 (DESIGN.md section 2).
func TestChatStatusSaysWhetherCallsRan(t *testing.T) {
	home := t.TempDir()
	startFakeLoopd(t, home, oneTurn)
	for outcome, want := range map[string]int{"result": 0, "denied": 1, "failed": 1} {
		code, out, errOut := runWith(t, nil, "chat", "--home", home, "--message", outcome)
		if code != want || out != "the reply\n" {
			t.Errorf("%s: status %d, stdout %q; want %d and the reply", outcome, code, out, want)
		}
		if summary := "not every tool call ran: call 1 (notes_read) " + outcome + ": why: " + outcome; want == 1 && !strings.Contains(errOut, summary) {
			t.Errorf("%s: stderr %q does not say %q", outcome, errOut, summary)
		}
	}
}

// TestUnknownSessionIsNamed: loopd's refusal of a name no session has
// reaches the owner as it says it, without the wire's error code.
func TestUnknownSessionIsNamed(t *testing.T) {
	home := t.TempDir()
	says := "no session named chat-typo (`boxmaker sessions` lists them)"
	startFakeLoopd(t, home, func(wire.Message) []wire.Message {
		return []wire.Message{wire.WireError{Code: wire.BadMessage, Detail: says}}
	})
	for _, args := range [][]string{
		{"chat", "--home", home, "--session", "chat-typo", "--message", "hello"},
		{"sessions", "--home", home, "show", "chat-typo"},
	} {
		code, _, errOut := runWith(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, ": "+says+"\n") || strings.Contains(errOut, "bad_message") {
			t.Errorf("%q: status %d, stderr %q; want 1 saying %q", args, code, errOut, says)
		}
	}
}

// TestChatReconnects: a connection loopd closed before the turn (loopd
// restarted since chat dialled) is dialled again, said so, and the message
// sent once, on the new connection.
func TestChatReconnects(t *testing.T) {
	home := t.TempDir()
	f := startFakeLoopd(t, home, oneTurn)
	f.dropNext(1)
	code, out, errOut := runWith(t, nil, "chat", "--home", home, "--message", "result")
	if code != 0 || out != "the reply\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, says := range []string{"the connection to loopd broke (", "); reconnecting for up to 30s\n", "reconnected to loopd\n"} {
		if !strings.Contains(errOut, says) {
			t.Errorf("stderr does not say %q:\n%s", says, errOut)
		}
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("loopd was sent %d messages, want 1", n)
	}
}

// TestChatCutMidTurnIsNotResent: a connection that breaks once the turn
// has begun is reported, and the message is not sent a second time.
func TestChatCutMidTurnIsNotResent(t *testing.T) {
	home := t.TempDir()
	f := startFakeLoopd(t, home, func(wire.Message) []wire.Message {
		s, _ := wire.ParseSessionID("chat-1")
		return []wire.Message{wire.SessionEvent{Session: s}, nil}
	})
	code, _, errOut := runWith(t, nil, "chat", "--home", home, "--message", "hello")
	if code != 1 || !strings.Contains(errOut, "broke during the turn") || !strings.Contains(errOut, "session chat-1 goes on") {
		t.Errorf("status %d, stderr %q", code, errOut)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("loopd was sent %d messages, want 1", n)
	}
}

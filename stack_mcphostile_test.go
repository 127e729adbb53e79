package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/mcpremote"
	"boxmaker/fixtures/poll"
)

// A hostile remote MCP server under the whole stack (issue 28): each case
// is contained, and the test says by what.

// remoteGrants grant every tool of the test server.
func remoteGrants() map[string]string {
	return map[string]string{"remote-all": "tool = \"mcp__remote__*\"\nmode = \"auto\"\nmax_taint = \"private\"\n"}
}

// shortCalls makes a call's time limit ([sandbox] wall_time) 3s.
func shortCalls(t *testing.T) func(home string) {
	return func(home string) {
		path := filepath.Join(home, "etc", "config.toml")
		data, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(data), `wall_time = "30s"`) {
			t.Fatalf("config.toml has no wall_time to shorten: %v", err)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(data), `wall_time = "30s"`, `wall_time = "3s"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The token the server echoes never reaches the result, up's log (every
// role's), the audit log or the session logs: egressd takes it out of the
// stream and brokerd out of the result.
func TestStackRemoteMCPTokenEchoIsRedacted(t *testing.T) {
	s, srv := remoteStack(t, mcpremote.Options{}, remoteGrants())
	s.run("mcp", "pin", "remote", "--yes")
	out := s.run("mcp", "call", "remote", "whoami", `{}`)
	if strings.Contains(out, remoteToken) || !strings.Contains(out, "[redacted]") {
		t.Errorf("mcp call whoami printed %q", out)
	}
	if got := srv.Authorizations(); len(got) == 0 || got[len(got)-1] != "Bearer "+remoteToken {
		t.Fatalf("the server did not get the token: %q", got)
	}
	s.stop()
	if strings.Contains(s.log.String(), remoteToken) {
		t.Errorf("up's log holds the token")
	}
	for _, dir := range []string{"audit", "sessions", "log"} {
		filepath.WalkDir(filepath.Join(s.home, dir), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if data, _ := os.ReadFile(path); strings.Contains(string(data), remoteToken) {
					t.Errorf("%s holds the token", path)
				}
			}
			return nil
		})
	}
}

// A redirect to another host is refused with a sentence that says so; the
// call fails and nothing follows it.
func TestStackRemoteMCPRedirectIsRefused(t *testing.T) {
	s, _ := remoteStack(t, mcpremote.Options{}, remoteGrants())
	s.run("mcp", "pin", "remote", "--yes")
	out, err := s.try("mcp", "call", "remote", "redirect", `{}`)
	if err == nil || !strings.Contains(out, "egressd follows no redirect") || !strings.Contains(out, `"203.0.113.7"`) {
		t.Errorf("mcp call redirect: %v\n%s\nup's log:\n%s", err, out, s.log)
	}
	if out := s.run("mcp", "call", "remote", "echo", `{"text":"after"}`); !strings.Contains(out, "Echo: after") {
		t.Errorf("the next call: %s", out)
	}
}

// An SSE reply that never ends fails the call at its time limit, the
// server's stream ends with the instance, and the next call works.
func TestStackRemoteMCPEndlessStreamEndsAtTheLimit(t *testing.T) {
	s, srv := remoteStack(t, mcpremote.Options{}, remoteGrants(), shortCalls(t))
	s.run("mcp", "pin", "remote", "--yes")
	out, err := s.try("mcp", "call", "remote", "endless", `{}`)
	if err == nil || !strings.Contains(out, "did not answer within 3s") {
		t.Errorf("mcp call endless: %v\n%s\nup's log:\n%s", err, out, s.log)
	}
	poll.Until(t, "the endless stream to end", func() bool { return srv.OpenStreams() == 0 })
	if out := s.run("mcp", "call", "remote", "echo", `{"text":"next"}`); !strings.Contains(out, "Echo: next") {
		t.Errorf("the next call: %s", out)
	}
}

// One event of several megabytes fails the call with a clear error, and
// what reaches brokerd (and the owner) is small.
func TestStackRemoteMCPHugeEventIsBounded(t *testing.T) {
	s, _ := remoteStack(t, mcpremote.Options{}, remoteGrants())
	s.run("mcp", "pin", "remote", "--yes")
	out, err := s.try("mcp", "call", "remote", "huge", `{"bytes":6000000}`)
	if err == nil || !strings.Contains(out, "SSE event exceeded") || len(out) > 8192 {
		t.Errorf("mcp call huge: %v, %d bytes\n%.2000s", err, len(out), out)
	}
	if out := s.run("mcp", "call", "remote", "echo", `{"text":"next"}`); !strings.Contains(out, "Echo: next") {
		t.Errorf("the next call: %s", out)
	}
}

// A session id with control characters is refused before any client
// reads it: the pin fails with a sentence that says why, and the
// characters reach neither the owner's terminal nor a log.
func TestStackRemoteMCPBadSessionIDIsRefused(t *testing.T) {
	s, _ := remoteStack(t, mcpremote.Options{BadSessionID: true}, remoteGrants())
	out, err := s.try("mcp", "pin", "remote", "--yes")
	if err == nil || !strings.Contains(out, "Mcp-Session-Id that is not visible ASCII") {
		t.Errorf("mcp pin: %v\n%s\nup's log:\n%s", err, out, s.log)
	}
	s.stop()
	for what, text := range map[string]string{"the terminal": out, "up's log": s.log.String()} {
		if strings.ContainsAny(text, "\u0085\u202e") {
			t.Errorf("%s holds the session id's control characters: %q", what, text)
		}
	}
}

// listModel calls the remote server's tools on the owner's word.
const listModel = `
[[rule]]
match = '^remote echo (?P<text>.+)$'
[[rule.tool_calls]]
name = 'mcp__remote__echo'
arguments = '{"text":"${text}"}'

[[rule]]
match = '^remote change$'
[[rule.tool_calls]]
name = 'mcp__remote__change'
arguments = '{}'

[[rule]]
role = 'tool'
content = '(remote model) the call is over'

[[rule]]
content = '(remote model) say remote echo TEXT or remote change'
`

// A server that changes a pinned tool in the middle of a session: its
// list_changed makes brokerd list again, and the changed tool is denied
// unpinned_tool in that same session without reaching the server.
func TestStackRemoteMCPListChangeMidSession(t *testing.T) {
	s, srv := remoteStackScript(t, listModel, mcpremote.Options{}, remoteGrants())
	s.run("mcp", "pin", "remote", "--yes")
	if out := s.say("a", "remote echo before"); !strings.Contains(out, "call 1: result:") {
		t.Fatalf("echo before the change: %s", out)
	}
	if out := s.say("a", "remote change"); !strings.Contains(out, "result:") {
		t.Fatalf("change: %s", out)
	}
	poll.Until(t, "brokerd to hear list_changed", func() bool {
		return strings.Contains(s.log.String(), ": list_changed")
	})
	out := s.say("a", "remote echo after")
	if !strings.Contains(out, "unpinned_tool") || strings.Contains(out, "result:") {
		t.Errorf("echo after the change: %s\nup's log:\n%s", out, s.log)
	}
	if n := srv.Calls("echo"); n != 1 {
		t.Errorf("the server got %d echo calls, want 1", n)
	}
}

// A reply that is not JSON-RPC fails the call with a clear message (the
// server's bytes neutralised), and the next call starts afresh and works.
func TestStackRemoteMCPGarbageFailsTheCall(t *testing.T) {
	s, _ := remoteStack(t, mcpremote.Options{}, remoteGrants())
	s.run("mcp", "pin", "remote", "--yes")
	out, err := s.try("mcp", "call", "remote", "garbage", `{}`)
	if err == nil || !strings.Contains(out, "mcp__remote__garbage: failed: the server failed: ") || strings.Contains(out, "\x1b") {
		t.Errorf("mcp call garbage (the tool named once, the server's bytes neutralised): %v\n%q", err, out)
	}
	if out := s.run("mcp", "call", "remote", "echo", `{"text":"next"}`); !strings.Contains(out, "Echo: next") {
		t.Errorf("the next call: %s", out)
	}
}

// A server that is down fails the pin with egressd's sentence; once it is
// up, the next try reaches it.
func TestStackRemoteMCPDownThenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := remoteStackAt(t, "http://"+addr+"/mcp", remoteGrants())
	out, err := s.try("mcp", "pin", "remote", "--yes")
	if err == nil || !strings.Contains(out, "egressd") || !strings.Contains(out, "refused") {
		t.Errorf("mcp pin while the server is down: %v\n%s", err, out)
	}
	srv, err := mcpremote.Start(mcpremote.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if pin := s.run("mcp", "pin", "remote", "--yes"); !strings.Contains(pin, "mcp__remote__echo") {
		t.Errorf("mcp pin once the server is up: %s", pin)
	}
}

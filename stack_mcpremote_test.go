package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/mcpremote"
	"boxmaker/fixtures/require"
)

// Remote MCP servers under the whole stack (issue 28, DESIGN.md section
// 16): `boxmaker up` as root, the server declared with url and secret,
// pinned by `mcp pin`, called by `mcp call` through brokerd, toolkit in its
// sandbox (no network) and egressd, to a server of the test's own on
// 127.0.0.1.

const remoteToken = "tok-remote-5f1e9c0a7d3b"

// remoteStack starts a test server and the stack with it declared as
// [mcp.remote], its secret in secrets/, and grants for its tools; prepare
// may change the home further.
func remoteStack(t *testing.T, opts mcpremote.Options, grants map[string]string, prepare ...func(home string)) (*stack, *mcpremote.Server) {
	t.Helper()
	return remoteStackScript(t, "", opts, grants, prepare...)
}

// remoteStackScript is remoteStack with the scripted model answering by
// script ("" for the default one).
func remoteStackScript(t *testing.T, script string, opts mcpremote.Options, grants map[string]string, prepare ...func(home string)) (*stack, *mcpremote.Server) {
	t.Helper()
	require.Root(t, "MCP sandboxes run under the role users")
	srv, err := mcpremote.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return remoteStackWith(t, script, srv.URL, grants, prepare...), srv
}

// remoteStackAt starts the stack with [mcp.remote] at url, where the test
// may or may not serve.
func remoteStackAt(t *testing.T, url string, grants map[string]string) *stack {
	t.Helper()
	require.Root(t, "MCP sandboxes run under the role users")
	return remoteStackWith(t, "", url, grants)
}

func remoteStackWith(t *testing.T, script, url string, grants map[string]string, prepare ...func(home string)) *stack {
	t.Helper()
	table := "[mcp.remote]\nurl = " + tomlBasic(url) + "\nsecret = \"remote-token\"\n"
	secret := func(home string) {
		dir := filepath.Join(home, "etc", "secrets")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "remote-token"), []byte(remoteToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	prepare = append([]func(string){withMCP(t, table), secret}, prepare...)
	if script != "" {
		return startStackScript(t, script, grants, prepare...)
	}
	return startStack(t, grants, prepare...)
}

func remoteGrant(tool string) string {
	return "tool = \"mcp__remote__" + tool + "\"\nmode = \"auto\"\nmax_taint = \"private\"\n"
}

// TestStackRemoteMCPCall: pin and call a remote server through egressd; the
// server got the bearer token, which never entered the sandbox.
func TestStackRemoteMCPCall(t *testing.T) {
	s, srv := remoteStack(t, mcpremote.Options{}, map[string]string{"remote-echo": remoteGrant("echo")})
	pin := s.run("mcp", "pin", "remote", "--yes")
	if !strings.Contains(pin, "mcp__remote__echo") {
		t.Fatalf("mcp pin: %s\nup's log:\n%s", pin, s.log)
	}
	out := s.run("mcp", "call", "remote", "echo", `{"text":"through egressd"}`)
	if !strings.Contains(out, "Echo: through egressd") {
		t.Fatalf("mcp call: %s\nup's log:\n%s", out, s.log)
	}
	got := srv.Authorizations()
	if len(got) == 0 || got[0] != "Bearer "+remoteToken {
		t.Errorf("the server got Authorization %q, want the bearer token", got)
	}
}

// A server that closes its SSE reply with a retry interval (SEP-1699)
// gets the GET that resumes it, with Last-Event-ID, through egressd, and
// its answer on that stream is the call's result.
func TestStackRemoteMCPResumesAStream(t *testing.T) {
	s, srv := remoteStack(t, mcpremote.Options{}, map[string]string{"remote-resume": remoteGrant("resume")})
	s.run("mcp", "pin", "remote", "--yes")
	if out := s.run("mcp", "call", "remote", "resume", `{}`); !strings.Contains(out, "resumed") {
		t.Fatalf("mcp call resume: %s\nup's log:\n%s", out, s.log)
	}
	if got := srv.Resumptions(); len(got) == 0 {
		t.Errorf("no GET resumed the stream with Last-Event-ID")
	}
}

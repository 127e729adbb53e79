package mcpclient

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/wire"
)

func TestReferenceFilesystemServer(t *testing.T) {
	share := t.TempDir()
	os.WriteFile(filepath.Join(share, "a.txt"), []byte("hello from the share\n"), 0o644)
	inst := startInstance(t, nodeServer(t, func(s require.MCPServers) string { return s.Filesystem }, share), testLimits)
	list := inst.tools()
	if list.Name == "" || list.Protocol == "" || len(list.Tools) < 5 {
		t.Fatalf("tool list: %+v", list)
	}
	names := map[wire.McpToolName]string{}
	for _, d := range list.Tools {
		names[d.Name] = string(d.Definition)
	}
	def, ok := names["read_text_file"]
	if !ok || !strings.HasPrefix(def, `{"annotations":`) && !strings.HasPrefix(def, `{"description":`) {
		t.Fatalf("read_text_file's definition: %q", def)
	}
	if again := inst.tools(); again.Tools[0].Definition != list.Tools[0].Definition {
		t.Errorf("the same tool listed twice gave two definitions")
	}
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(share, "a.txt")})
	r := resultText(t, inst.call("read_text_file", string(args)))
	if r.IsError || !strings.Contains(string(r.Text), "hello from the share") {
		t.Fatalf("read_text_file: %+v", r)
	}
	args, _ = json.Marshal(map[string]string{"path": "/etc/passwd"})
	r = resultText(t, inst.call("read_text_file", string(args)))
	if !r.IsError {
		t.Errorf("a path outside the server's own root was read: %+v", r)
	}
}

func TestReferenceMemoryServer(t *testing.T) {
	srv := nodeServer(t, func(s require.MCPServers) string { return s.Memory })
	// Its default file is beside its code, in the repository's tools/mcp.
	srv.Env = append(srv.Env, "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	inst := startInstance(t, srv, testLimits)
	inst.tools()
	create := `{"entities":[{"name":"Ada","entityType":"person","observations":["wrote the first program"]}]}`
	if r := resultText(t, inst.call("create_entities", create)); r.IsError {
		t.Fatalf("create_entities: %+v", r)
	}
	r := resultText(t, inst.call("read_graph", `{}`))
	if !strings.Contains(string(r.Text), "wrote the first program") {
		t.Fatalf("read_graph: %+v", r)
	}
}

func TestReferenceEverythingServer(t *testing.T) {
	inst := startInstance(t, nodeServer(t, func(s require.MCPServers) string { return s.Everything }, "stdio"), testLimits)
	list := inst.tools()
	have := map[wire.McpToolName]bool{}
	for _, d := range list.Tools {
		have[d.Name] = true
	}
	for _, name := range []wire.McpToolName{"echo", "get-sum"} {
		if !have[name] {
			t.Fatalf("server-everything lists no %s: %+v", name, list.Tools)
		}
	}
	r := resultText(t, inst.call("echo", `{"message":"hi there"}`))
	if !strings.Contains(string(r.Text), "hi there") {
		t.Errorf("echo: %+v", r)
	}
	r = resultText(t, inst.call("get-sum", `{"a":2,"b":40}`))
	if !strings.Contains(string(r.Text), "42") {
		t.Errorf("get-sum: %+v", r)
	}
	if have["get-tiny-image"] {
		r = resultText(t, inst.call("get-tiny-image", `{}`))
		if !strings.Contains(string(r.Text), "[image image/png, ") {
			t.Errorf("an image is named with its type and size: %+v", r)
		}
	}
}

func TestHostileHugeReplyIsCut(t *testing.T) {
	inst := startInstance(t, hostile(t), testLimits)
	r := resultText(t, inst.call("big", `{"bytes":"8388608"}`))
	if !r.Truncated || len(r.Text) != testLimits.ResultBytes {
		t.Fatalf("an 8 MiB reply: %d bytes, truncated %v", len(r.Text), r.Truncated)
	}
	if r := resultText(t, inst.call("echo", `{"text":"still here"}`)); r.Text != "still here" {
		t.Errorf("after a huge reply: %+v", r)
	}
}

// A line past the client's limit ends the instance: the call fails and the
// memory it would have taken is never allocated.
func TestHostileEndlessReplyEndsTheInstance(t *testing.T) {
	lim := testLimits
	lim.MaxLine = 1 << 20
	inst := startInstance(t, hostile(t), lim)
	got := inst.call("big", `{"bytes":"4194304"}`)
	if _, ok := got[len(got)-1].(wire.McpToolError); !ok {
		t.Fatalf("a reply over the line limit: %#v", got[len(got)-1])
	}
	inst.in.Close()
	if err := <-inst.done; err == nil {
		t.Errorf("the instance went on after a broken line")
	}
	inst.done <- nil
}

func TestHostileHangFailsTheCallAndEnds(t *testing.T) {
	lim := testLimits
	lim.CallTime = 300 * time.Millisecond
	inst := startInstance(t, hostile(t), lim)
	start := time.Now()
	got := inst.call("hang", `{}`)
	e, ok := got[len(got)-1].(wire.McpToolError)
	if !ok || !strings.Contains(string(e.Message), "did not answer") {
		t.Fatalf("a call that never returns: %#v", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the hung call took %v", d)
	}
	if err := <-inst.done; err == nil {
		t.Errorf("the instance went on after a hung call")
	}
	inst.done <- nil
}

func TestHostileCrashMidCall(t *testing.T) {
	inst := startInstance(t, hostile(t), testLimits)
	got := inst.call("crash", `{}`)
	if _, ok := got[len(got)-1].(wire.McpToolError); !ok {
		t.Fatalf("a crash mid-call: %#v", got)
	}
	if err := <-inst.done; err == nil {
		t.Errorf("the instance went on after its server died")
	}
	inst.done <- nil
}

func TestHostileCallbacksAreRefused(t *testing.T) {
	inst := startInstance(t, hostile(t), testLimits)
	for _, tool := range []string{"sample", "roots"} {
		r := resultText(t, inst.call(tool, `{}`))
		if !strings.Contains(string(r.Text), `"error"`) || strings.Contains(string(r.Text), `"result"`) {
			t.Errorf("%s: the client answered %s", tool, r.Text)
		}
	}
	if d := inst.diag.String(); !strings.Contains(d, "refused the server's request sampling/createMessage") {
		t.Errorf("the refusal is not logged: %s", d)
	}
}

func TestHostileEscapesNeverReachTheLog(t *testing.T) {
	inst := startInstance(t, hostile(t), testLimits)
	inst.tools()
	// A notification may come after the answer it went with: the next
	// request's frames carry it then.
	got := append(inst.call("escape", `{}`), inst.call("echo", `{"text":"x"}`)...)
	var notices int
	for _, m := range got {
		n, ok := m.(wire.McpNotice)
		if !ok {
			continue
		}
		notices++
		if hasControl(string(n.Text)) || !strings.Contains(string(n.Text), `\x1b`) {
			t.Errorf("notice not sanitized: %q", n.Text)
		}
	}
	if notices != 2 {
		t.Errorf("%d notices, want the log and the progress line", notices)
	}
	poll.Until(t, "the server's stderr in the log", func() bool { return strings.Contains(inst.diag.String(), "stderr") })
	if d := inst.diag.String(); hasControl(strings.ReplaceAll(d, "\n", "")) || !strings.Contains(d, `server: stderr\x1b[2J`) {
		t.Errorf("the server's stderr in the log: %q", d)
	}
}

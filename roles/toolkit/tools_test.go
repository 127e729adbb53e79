//go:build linux && amd64

package toolkit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/internal/toolrun"
)

func testLimits() toolrun.Limits {
	return toolrun.Limits{CPUSeconds: 5, MemoryBytes: 256 << 20, OutputBytes: 64 << 10, Processes: 64, FileBytes: 1 << 20}
}

// argsJSON encodes the model's arguments object.
func argsJSON(t testing.TB, args map[string]string) string {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// runUnconfined runs a tool in this process, without a sandbox: the tests
// of what each tool does, apart from how it is fenced.
func runUnconfined(t *testing.T, memory, tool string, args map[string]string, mounts ...toolrun.Mount) toolrun.Output {
	t.Helper()
	tl := &tools{memory: memory, job: toolrun.Job{Tool: tool, Arguments: argsJSON(t, args), Mounts: mounts, Limits: testLimits()}}
	if toolrun.NeedsOf(tool).System {
		tl.job.System = &toolrun.System{ShellPath: "/usr/bin:/bin"}
	}
	return tl.run(context.Background())
}

func TestNotes(t *testing.T) {
	memory := t.TempDir()
	notes := toolrun.Mount{Path: filepath.Join(memory, "notes"), Writable: true}
	writeFile(t, filepath.Join(memory, "notes", "old.md"), "Old line\nthe Quick brown fox\n")
	out := runUnconfined(t, memory, "notes_write", map[string]string{"path": "notes/a/b.md", "content": "hello\nQUICK thinking\n"}, notes)
	if !out.OK {
		t.Fatalf("notes_write: %+v", out)
	}
	out = runUnconfined(t, memory, "notes_read", map[string]string{"path": "notes/a/b.md"}, notes)
	if !out.OK || out.Content != "hello\nQUICK thinking\n" {
		t.Fatalf("notes_read: %+v", out)
	}
	out = runUnconfined(t, memory, "notes_search", map[string]string{"query": "quick"}, notes)
	// Both notes hold "quick" once; the shorter ranks first.
	want := "notes matching \"quick\": 2 of 2, best first (score path:line: passage)\n" +
		"0.211 notes/a/b.md:2: QUICK thinking\n0.16 notes/old.md:2: the Quick brown fox\n"
	if !out.OK || out.Content != want {
		t.Fatalf("notes_search: %+v, want %q", out, want)
	}
	if out := runUnconfined(t, memory, "notes_search", map[string]string{"query": "zebra"}, notes); !out.OK || !strings.Contains(out.Content, "no notes") {
		t.Fatalf("notes_search without a match: %+v", out)
	}
}

func TestNotesRefuseEscapes(t *testing.T) {
	memory := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "hunter2")
	notes := toolrun.Mount{Path: filepath.Join(memory, "notes"), Writable: true}
	writeFile(t, filepath.Join(memory, "notes", "ok.md"), "fine")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(memory, "notes", "link.md")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]string
	}{
		{"notes_read", map[string]string{"path": "../" + filepath.Base(outside) + "/secret"}},
		{"notes_read", map[string]string{"path": "/etc/passwd"}},
		{"notes_read", map[string]string{"path": "notes/link.md"}},
		{"notes_write", map[string]string{"path": "notes/link.md", "content": "overwritten"}},
		{"notes_write", map[string]string{"path": "notes/../../x", "content": "x"}},
		{"notes_read", map[string]string{"path": ""}},
	} {
		out := runUnconfined(t, memory, c.tool, c.args, notes)
		if out.OK || strings.Contains(out.Content, "hunter2") {
			t.Errorf("%s %v: %+v", c.tool, c.args, out)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "hunter2" {
		t.Fatalf("the file outside was changed to %q", data)
	}
	if out := runUnconfined(t, memory, "notes_search", map[string]string{"query": "hunter2"}, notes); !strings.HasPrefix(out.Content, "no notes") {
		t.Fatalf("notes_search followed a symlink out: %+v", out)
	}
}

func TestFileRead(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "text\n")
	if err := os.WriteFile(filepath.Join(dir, "b.bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := runUnconfined(t, "", "file_read", map[string]string{"path": filepath.Join(dir, "a.txt")}); !out.OK || out.Content != "text\n" {
		t.Fatalf("file_read: %+v", out)
	}
	for _, p := range []string{"a.txt", filepath.Join(dir, "b.bin"), dir, filepath.Join(dir, "missing")} {
		if out := runUnconfined(t, "", "file_read", map[string]string{"path": p}); out.OK {
			t.Errorf("file_read %s: %+v", p, out)
		}
	}
}

func TestShellReportsStatusAndLimits(t *testing.T) {
	cases := []struct {
		command string
		ok      bool
		want    string
	}{
		{"echo out; echo err >&2", true, "out\nerr\n[exit status 0]"},
		{"echo partial; exit 3", true, "partial\n[exit status 3]"},
		{"kill -TERM $$", true, "[killed by SIGTERM]"},
		{"kill -XCPU $$", false, "the CPU time limit of 5 s"},
		{"yes", false, "passed 65536 bytes"},
	}
	for _, c := range cases {
		out := runUnconfined(t, "", "shell", map[string]string{"command": c.command})
		if out.OK != c.ok || !strings.Contains(out.Content, c.want) {
			t.Errorf("shell %q = %+v, want ok=%v and %q", c.command, out, c.ok, c.want)
		}
	}
}

func TestHTTPFetch(t *testing.T) {
	page := `<html><head><title>Hi</title><script>alert("no")</script></head>` +
		`<body><h1>Top</h1><p>One  <b>two</b>
		three</p><ul><li>a</li><li><a href="/next">b</a></li></ul></body></html>`
	near, seen := egressPeer(t, 200, "text/html; charset=utf-8", page)
	tl := &tools{egress: egressConnFor(t, near), job: toolrun.Job{Tool: "http_fetch",
		Arguments: `{"url":"https://example.test/page"}`, Limits: testLimits(), Egress: true}}
	out := tl.run(context.Background())
	want := "Hi\n\n# Top\n\nOne two three\n\n- a\n- b <https://example.test/next>\n"
	if !out.OK || out.Content != want {
		t.Fatalf("http_fetch = %+v\nwant %q", out, want)
	}
	req := <-seen
	if req.Method != "GET" || req.URI != "https://example.test/page" || req.Header.Get("User-Agent") != "boxmaker" {
		t.Fatalf("egressd saw %+v", req)
	}
}

func TestHTTPFetchRefuses(t *testing.T) {
	for _, c := range []struct {
		status      int
		contentType string
		want        string
	}{
		{404, "text/html", "http_fetch: status 404"},
		{200, "image/png", "not a text type"},
		{200, "application/octet-stream", "not a text type"},
	} {
		near, _ := egressPeer(t, c.status, c.contentType, "x")
		tl := &tools{egress: egressConnFor(t, near), job: toolrun.Job{Tool: "http_fetch",
			Arguments: `{"url":"https://example.test/"}`, Limits: testLimits(), Egress: true}}
		if out := tl.run(context.Background()); out.OK || !strings.Contains(out.Content, c.want) {
			t.Errorf("%d %s: %+v, want %q", c.status, c.contentType, out, c.want)
		}
	}
}

func TestConsult(t *testing.T) {
	near, seen := egressPeer(t, 200, "application/json",
		`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"42"}}],"usage":{}}`)
	tl := &tools{egress: egressConnFor(t, near), job: toolrun.Job{Tool: "consult", Arguments: `{"prompt":"meaning?"}`,
		Limits: testLimits(), Egress: true, Consult: &toolrun.Consult{URL: "https://api.example.test/v1/chat/completions", Model: "big"}}}
	if out := tl.run(context.Background()); !out.OK || out.Content != "42" {
		t.Fatalf("consult = %+v", out)
	}
	req := <-seen
	if req.Method != "POST" || req.URI != "https://api.example.test/v1/chat/completions" || req.Header.Get("Authorization") != "" {
		t.Fatalf("egressd saw %+v", req)
	}
	if want := `{"model":"big","messages":[{"role":"user","content":"meaning?"}]}`; req.Body != want {
		t.Fatalf("body %s, want %s", req.Body, want)
	}
}

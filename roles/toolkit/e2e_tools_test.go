//go:build linux && amd64

package toolkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
)

// TestSandboxTools runs each tool for real, the happy path.
func TestSandboxTools(t *testing.T) {
	requireSandbox(t)
	h := newHostTree(t)
	t.Run("file_read", func(t *testing.T) {
		out := toolRun{tool: "file_read", args: map[string]string{"path": filepath.Join(h.docs, "a.txt")},
			mounts: []sandbox.Mount{h.docsMount()}}.output(t)
		if !out.OK || out.Content != "granted text\n" {
			t.Fatalf("file_read = %+v", out)
		}
		file := filepath.Join(h.docs, "a.txt") // a grant of one file, mounted alone
		out = toolRun{tool: "file_read", args: map[string]string{"path": file},
			mounts: []sandbox.Mount{{Host: file, Path: file}}}.output(t)
		if !out.OK || out.Content != "granted text\n" {
			t.Fatalf("file_read of a file grant = %+v", out)
		}
	})
	t.Run("notes", func(t *testing.T) {
		notesAreWritten(t, h)
	})
	t.Run("shell", func(t *testing.T) {
		out := toolRun{tool: "shell", args: map[string]string{"command": "echo hi; id -u; exit 3"}}.output(t)
		if !out.OK || out.Content != "hi\n65534\n[exit status 3]" {
			t.Fatalf("shell = %+v", out)
		}
	})
	t.Run("http_fetch", func(t *testing.T) {
		near, seen := egressPeer(t, 200, "text/html", "<title>T</title><p>Hello, <b>world</b>.</p>")
		out := toolRun{tool: "http_fetch", args: map[string]string{"url": "https://example.test/"}, egress: near}.output(t)
		if !out.OK || out.Content != "T\n\nHello, world.\n" {
			t.Fatalf("http_fetch = %+v", out)
		}
		if req := <-seen; req.URI != "https://example.test/" || req.Header.Get("User-Agent") != "boxmaker" {
			t.Fatalf("egressd saw %+v", req)
		}
	})
	t.Run("consult", func(t *testing.T) {
		near, seen := egressPeer(t, 200, "application/json", `{"choices":[{"message":{"content":"from the big model"}}]}`)
		out := toolRun{tool: "consult", args: map[string]string{"prompt": "hello"}, egress: near,
			consult: &toolrun.Consult{URL: "https://api.example.test/v1/chat/completions", Model: "big"}}.output(t)
		if !out.OK || out.Content != "from the big model" {
			t.Fatalf("consult = %+v", out)
		}
		if req := <-seen; req.Method != "POST" || req.Header.Get("Authorization") != "" || !strings.Contains(req.Body, `"model":"big"`) {
			t.Fatalf("egressd saw %+v", req)
		}
	})
}

func notesAreWritten(t *testing.T, h hostTree) {
	rw := []sandbox.Mount{h.notesMount(true)}
	out := toolRun{tool: "notes_write", args: map[string]string{"path": "notes/new/idea.md", "content": "Alice likes tea\n"}, mounts: rw}.output(t)
	if !out.OK {
		t.Fatalf("notes_write = %+v", out)
	}
	if data, err := os.ReadFile(filepath.Join(h.notes, "new", "idea.md")); err != nil || string(data) != "Alice likes tea\n" {
		t.Fatalf("the host holds %q, %v", data, err)
	}
	out = toolRun{tool: "notes_read", args: map[string]string{"path": "notes/todo.md"}, mounts: []sandbox.Mount{h.notesMount(false)}}.output(t)
	if !out.OK || out.Content != "- buy milk\n- Call Alice\n" {
		t.Fatalf("notes_read = %+v", out)
	}
	out = toolRun{tool: "notes_search", args: map[string]string{"query": "alice"}, mounts: []sandbox.Mount{h.notesMount(false)}}.output(t)
	// Ranked by BM25: both hold "alice" once, the shorter note first.
	want := "notes matching \"alice\": 2 of 2, best first (score path:line: passage)\n" +
		"0.194 notes/new/idea.md:1: Alice likes tea\n0.172 notes/todo.md:2: - Call Alice\n"
	if !out.OK || out.Content != want {
		t.Fatalf("notes_search = %+v, want %q", out, want)
	}
}

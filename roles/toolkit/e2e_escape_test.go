//go:build linux && amd64

package toolkit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
)

// TestSandboxEscapes tries, from inside real sandboxes, what a hostile
// model would ask a tool to do, and shows each attempt fail.
func TestSandboxEscapes(t *testing.T) {
	requireSandbox(t)
	h := newHostTree(t)
	t.Run("read outside the grants", func(t *testing.T) { readsStayInside(t, h) })
	t.Run("symlinks out of the notes", func(t *testing.T) { symlinksLeadNowhere(t, h) })
	t.Run("write to a read-only grant", func(t *testing.T) { readOnlyHolds(t, h) })
	t.Run("reach the network", networkIsUnreachable)
	t.Run("see a secret", func(t *testing.T) { secretsStayOutside(t, h) })
	t.Run("leave the namespaces", namespacesAreFixed)
	t.Run("fork past the process limit", forksAreBounded)
	t.Run("run past the wall time", wallTimeIsBounded)
	t.Run("run past the CPU time", cpuTimeIsBounded)
	t.Run("write past the file size", fileSizeIsBounded)
	t.Run("print past the output cap", outputIsBounded)
}

// refused fails the test unless the run gave a failed Output or no Output,
// and returns what the tool said.
func refused(t *testing.T, r toolRun) string {
	t.Helper()
	res, err := r.run(t)
	if err == nil && res.Output.OK {
		t.Fatalf("%s %v succeeded: %q", r.tool, r.args, res.Output.Content)
	}
	if strings.Contains(res.Output.Content, secretText) {
		t.Fatalf("%s %v revealed the secret: %q", r.tool, r.args, res.Output.Content)
	}
	return res.Output.Content
}

func readsStayInside(t *testing.T, h hostTree) {
	granted := []sandbox.Mount{h.docsMount()}
	for _, path := range []string{
		h.secret,
		filepath.Join(h.docs, "..", "outside", "secret"),
		"/etc/passwd",
		"/proc/1/environ",
		"/boxmaker",
	} {
		refused(t, toolRun{tool: "file_read", args: map[string]string{"path": path}, mounts: granted})
	}
	refused(t, toolRun{tool: "notes_read", args: map[string]string{"path": "../outside/secret"}, mounts: []sandbox.Mount{h.notesMount(false)}})
}

func symlinksLeadNowhere(t *testing.T, h hostTree) {
	link := filepath.Join(h.notes, "planted.md")
	if err := os.Symlink(h.secret, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	ro := []sandbox.Mount{h.notesMount(false)}
	refused(t, toolRun{tool: "notes_read", args: map[string]string{"path": "notes/planted.md"}, mounts: ro})
	out := toolRun{tool: "notes_search", args: map[string]string{"query": "hunter2"}, mounts: ro}.output(t)
	if strings.Contains(out.Content, secretText) {
		t.Fatalf("notes_search followed the link: %q", out.Content)
	}
	// A notes entry that is itself a symlink out: brokerd's Resolve refuses
	// to mount it, and the launcher refuses a path it did not resolve.
	entry := filepath.Join(h.memory, "evil")
	if err := os.Symlink(h.outside, entry); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(entry)
	if got, err := sandbox.Resolve(h.memory, entry); err == nil {
		t.Fatalf("Resolve let %s through as %s", entry, got)
	}
	_, err := toolRun{tool: "notes_read", args: map[string]string{"path": "evil/secret"},
		mounts: []sandbox.Mount{{Host: entry, Path: toolrun.MemoryDir + "/evil"}}}.run(t)
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("the launcher mounted a symlinked host path: %v", err)
	}
}

func readOnlyHolds(t *testing.T, h hostTree) {
	refused(t, toolRun{tool: "notes_write", args: map[string]string{"path": "notes/todo.md", "content": "pwned"},
		mounts: []sandbox.Mount{h.notesMount(false)}})
	refused(t, toolRun{tool: "notes_write", args: map[string]string{"path": "elsewhere.md", "content": "pwned"},
		mounts: []sandbox.Mount{h.notesMount(true)}})
	// shell has no file grants of its own; brokerd mounts none for it, but
	// even a read-only mount it was given (here the docs) must hold.
	out := toolRun{tool: "shell", args: map[string]string{"command": "echo pwned > " + filepath.Join(h.docs, "a.txt") + " || echo refused"},
		mounts: []sandbox.Mount{h.docsMount()}}.output(t)
	if !strings.Contains(out.Content, "refused") {
		t.Fatalf("shell wrote to a read-only grant: %q", out.Content)
	}
	for _, f := range []string{filepath.Join(h.notes, "todo.md"), filepath.Join(h.docs, "a.txt")} {
		if data, _ := os.ReadFile(f); strings.Contains(string(data), "pwned") {
			t.Fatalf("%s was changed", f)
		}
	}
	if _, err := os.Stat(filepath.Join(h.memory, "elsewhere.md")); err == nil {
		t.Fatal("notes_write created a file outside its grant")
	}
}

func networkIsUnreachable(t *testing.T) {
	attempts := map[string]string{
		"/usr/bin/python3": `python3 -c 'import socket; socket.create_connection(("1.1.1.1", 80), timeout=2)' 2>&1 || echo refused`,
		"/bin/bash":        `bash -c 'echo x > /dev/tcp/1.1.1.1/80' 2>&1 || echo refused`,
	}
	tried := 0
	for program, command := range attempts {
		if _, err := os.Stat(program); err != nil {
			t.Logf("%s is not installed; not trying it", program)
			continue
		}
		tried++
		out := toolRun{tool: "shell", args: map[string]string{"command": command}}.output(t)
		if !strings.Contains(out.Content, "refused") || !strings.Contains(out.Content, "not permitted") {
			t.Errorf("%s reached out, or failed for another reason: %q", program, out.Content)
		}
	}
	if tried == 0 {
		require.Available(t, "python3 or bash", errors.New("neither is installed to try a connection from"))
	}
}

func secretsStayOutside(t *testing.T, h hostTree) {
	t.Setenv("BOXMAKER_TEST_SECRET", "hunter2-env")
	command := "env; cat /proc/1/environ /proc/self/environ " + h.secret + "; ls / /proc /etc; cat /boxmaker | head -c 1; true"
	out := toolRun{tool: "shell", args: map[string]string{"command": command}}.output(t)
	if strings.Contains(out.Content, "hunter2") || !strings.Contains(out.Content, "PATH=/usr/bin:/bin") {
		t.Fatalf("what the sandbox saw:\n%s", out.Content)
	}
}

func namespacesAreFixed(t *testing.T) {
	out := toolRun{tool: "shell", args: map[string]string{
		"command": "unshare -U true 2>&1 || echo refused-unshare; mount -t tmpfs x /tmp 2>&1 || echo refused-mount",
	}}.output(t)
	for _, want := range []string{"refused-unshare", "refused-mount"} {
		if !strings.Contains(out.Content, want) {
			t.Errorf("inside the sandbox:\n%s", out.Content)
		}
	}
}

// forksAreBounded runs the sandbox as nobody when the test runs as root:
// the kernel exempts root's processes from RLIMIT_NPROC, and brokerd never
// runs as root.
func forksAreBounded(t *testing.T) {
	r := toolRun{tool: "shell", args: map[string]string{
		"command": "for i in $(seq 60); do sleep 2 </dev/null >/dev/null 2>&1 & done; echo all-started",
	}}
	r.limits = testLimits()
	r.limits.Processes = 24
	if os.Geteuid() == 0 {
		r.runAs = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	// The shell runs and fails (dash: "Cannot fork"), or the toolkit
	// itself finds no thread to start; either way the loop never ends.
	res, err := r.run(t)
	if err == nil && (strings.Contains(res.Output.Content, "all-started") || !strings.Contains(res.Output.Content, "fork")) {
		t.Fatalf("60 processes under a limit of 24: %q", res.Output.Content)
	}
}

func wallTimeIsBounded(t *testing.T) {
	res, err := toolRun{tool: "shell", args: map[string]string{"command": "sleep 60"}, wall: time.Second}.run(t)
	var f *sandbox.Failure
	if !errors.As(err, &f) || f.Kind != sandbox.TimedOut || res.Elapsed > 5*time.Second {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func cpuTimeIsBounded(t *testing.T) {
	r := toolRun{tool: "shell", args: map[string]string{"command": "while :; do :; done"}}
	r.limits = testLimits()
	r.limits.CPUSeconds = 1
	if got := refused(t, r); !strings.Contains(got, "CPU time limit") {
		t.Fatalf("shell said %q", got)
	}
}

func fileSizeIsBounded(t *testing.T) {
	r := toolRun{tool: "shell", args: map[string]string{"command": "head -c 3000000 /dev/zero > /tmp/big; wc -c < /tmp/big"}}
	r.limits = testLimits()
	r.limits.FileBytes = 1 << 20
	out := r.output(t)
	if !strings.Contains(out.Content, "1048576\n") {
		t.Fatalf("shell said %q", out.Content)
	}
}

func outputIsBounded(t *testing.T) {
	r := toolRun{tool: "shell", args: map[string]string{"command": "yes"}}
	r.limits = testLimits()
	r.limits.OutputBytes = 4096
	if got := refused(t, r); !strings.Contains(got, "passed 4096 bytes") {
		t.Fatalf("shell said %q", got)
	}
}

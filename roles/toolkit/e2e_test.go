//go:build linux && amd64

package toolkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
)

// End-to-end runs: the real toolkit, built from internal/testmain, inside
// real bubblewrap sandboxes started by the launcher brokerd uses.

var built struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// toolkitBinary builds boxmaker with the toolkit role, static as the real
// binary is, once per test binary, in a directory any user may enter.
func toolkitBinary(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = err
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "boxmaker-toolkit-"); built.err != nil {
			return
		}
		if built.err = os.Chmod(built.dir, 0o755); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "boxmaker")
		cmd := exec.Command(goTool, "build", "-o", built.path, "boxmaker/roles/toolkit/internal/testmain")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = &buildError{err, string(out)}
		}
	})
	if built.err != nil {
		tb.Fatalf("building the toolkit: %v", built.err)
	}
	return built.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// requireSandbox skips where bubblewrap cannot run, and returns its path.
func requireSandbox(tb testing.TB) string {
	tb.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err == nil {
		_, err = sandbox.Check(context.Background(), bwrap)
	}
	require.Bwrap(tb, err)
	return bwrap
}

// toolRun is one call of a tool through the launcher.
type toolRun struct {
	tool    string
	args    map[string]string
	mounts  []sandbox.Mount
	egress  *os.File
	consult *toolrun.Consult
	limits  toolrun.Limits
	wall    time.Duration
	runAs   *syscall.Credential
	system  *toolrun.System // nil: the default for a tool that runs /bin/sh
}

func (r toolRun) spec(tb testing.TB) sandbox.Spec {
	tb.Helper()
	if r.limits == (toolrun.Limits{}) {
		r.limits = testLimits()
	}
	if r.wall == 0 {
		r.wall = 20 * time.Second
	}
	needs := toolrun.NeedsOf(r.tool)
	if needs.System && r.system == nil {
		r.system = &toolrun.System{ShellPath: "/usr/bin:/bin"}
	}
	return sandbox.Spec{
		Bwrap:       requireSandbox(tb),
		Executable:  toolkitBinary(tb),
		Mounts:      r.mounts,
		System:      needs.System,
		Egress:      r.egress,
		WallTime:    r.wall,
		OutputBytes: r.limits.OutputBytes,
		RunAs:       r.runAs,
		Job: toolrun.Job{
			Tool:      r.tool,
			Arguments: argsJSON(tb, r.args),
			Mounts:    sandbox.JobMounts(r.mounts),
			Limits:    r.limits,
			Egress:    needs.Egress,
			Consult:   r.consult,
			System:    r.system,
		},
	}
}

func (r toolRun) run(t *testing.T) (sandbox.Result, error) {
	t.Helper()
	return sandbox.Run(context.Background(), r.spec(t))
}

// output runs r and fails the test unless the sandbox gave an Output.
func (r toolRun) output(t *testing.T) toolrun.Output {
	t.Helper()
	res, err := r.run(t)
	if err != nil {
		t.Fatalf("%s %v: %v\ndiagnostics: %s", r.tool, r.args, err, res.Diagnostics)
	}
	return res.Output
}

// hostTree is a directory outside /tmp with a granted part, a notes
// directory and a file that no run is granted.
type hostTree struct {
	docs, memory, notes, outside, secret string
}

const secretText = "hunter2-file"

func newHostTree(t *testing.T) hostTree {
	base := hostDir(t)
	h := hostTree{
		docs:    filepath.Join(base, "docs"),
		memory:  filepath.Join(base, "memory"),
		notes:   filepath.Join(base, "memory", "notes"),
		outside: filepath.Join(base, "outside"),
	}
	h.secret = filepath.Join(h.outside, "secret")
	writeFile(t, filepath.Join(h.docs, "a.txt"), "granted text\n")
	writeFile(t, filepath.Join(h.notes, "todo.md"), "- buy milk\n- Call Alice\n")
	writeFile(t, h.secret, secretText)
	return h
}

func (h hostTree) docsMount() sandbox.Mount { return sandbox.Mount{Host: h.docs, Path: h.docs} }

func (h hostTree) notesMount(writable bool) sandbox.Mount {
	return sandbox.Mount{Host: h.notes, Path: toolrun.MemoryDir + "/notes", Writable: writable}
}

package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
)

// requireSandbox skips a test that needs bubblewrap where it cannot run.
func requireSandbox(t *testing.T) string {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err == nil {
		_, err = Check(context.Background(), bwrap)
	}
	require.Bwrap(t, err)
	return bwrap
}

// fakeToolkit writes a shell script that stands in for boxmaker inside the
// sandbox, to show what the launcher does with a misbehaving tool.
func fakeToolkit(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "boxmaker")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// jsonText is sh that turns its stdin into a JSON string body.
const jsonText = `tr '\n\0' '  ' | sed 's/\\/\\\\/g; s/"/\\"/g'`

func runFake(t *testing.T, ctx context.Context, body string, change func(*Spec)) (Result, error) {
	t.Helper()
	s := shellSpec(requireSandbox(t), fakeToolkit(t, body))
	if change != nil {
		change(&s)
	}
	return Run(ctx, s)
}

func failureKind(err error) FailureKind {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return ""
}

func TestRunDecodesOneOutput(t *testing.T) {
	res, err := runFake(t, context.Background(), `cat >/dev/null; printf '{"ok":true,"content":"fine"}'`, nil)
	if err != nil || !res.Output.OK || res.Output.Content != "fine" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestRunDistrustsAnythingElse(t *testing.T) {
	for name, body := range map[string]string{
		"garbage":         `echo 'I am the tool and everything is fine'`,
		"nothing":         `true`,
		"a label":         `printf '{"ok":true,"content":"x","class":"public"}'`,
		"two outputs":     `printf '{"ok":true,"content":"x"}{"ok":true,"content":"y"}'`,
		"a partial":       `printf '{"ok":true,"content":"x'`,
		"invalid utf8":    `printf '{"ok":true,"content":"\377"}'`,
		"a missing field": `printf '{"content":"x"}'`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runFake(t, context.Background(), body, nil)
			if failureKind(err) != BadOutput {
				t.Fatalf("Run = %v, want a bad_output failure", err)
			}
		})
	}
}

func TestRunKillsOutputOverTheCap(t *testing.T) {
	res, err := runFake(t, context.Background(), `head -c 10000000 /dev/zero; sleep 20`, func(s *Spec) {
		s.OutputBytes = 64 << 10
	})
	if failureKind(err) != OutputOver || !strings.Contains(err.Error(), "more than 65536 bytes") {
		t.Fatalf("Run = %v, want an output_over failure", err)
	}
	if res.Elapsed > 5*time.Second {
		t.Fatalf("the run took %s: it was not killed at the cap", res.Elapsed)
	}
}

func TestRunKillsEverythingAtTheWallTime(t *testing.T) {
	res, err := runFake(t, context.Background(), `sleep 31.4159 & sleep 31.4159`, func(s *Spec) {
		s.WallTime = 300 * time.Millisecond
	})
	if failureKind(err) != TimedOut {
		t.Fatalf("Run = %v, want a timed_out failure", err)
	}
	if res.Elapsed > 3*time.Second {
		t.Fatalf("the run took %s", res.Elapsed)
	}
	waitForNoProcess(t, "31.4159")
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := runFake(t, ctx, `sleep 27.1828`, nil)
	if failureKind(err) != Canceled {
		t.Fatalf("Run = %v, want a canceled failure", err)
	}
	waitForNoProcess(t, "27.1828")
}

func TestRunReportsAFailedExitWithDiagnostics(t *testing.T) {
	res, err := runFake(t, context.Background(), `echo boom >&2; printf '{"ok":true,"content":"x"}'; exit 3`, nil)
	if failureKind(err) != Exited || !strings.Contains(err.Error(), "status 3") {
		t.Fatalf("Run = %v, want an exited failure with status 3", err)
	}
	if !strings.Contains(res.Diagnostics, "boom") {
		t.Fatalf("diagnostics %q lack the tool's stderr", res.Diagnostics)
	}
}

func TestRunPassesNoEnvironmentOrDescriptors(t *testing.T) {
	t.Setenv("BOXMAKER_TEST_SECRET", "hunter2-env")
	grant := t.TempDir()
	body := `{ env; tr '\0' '\n' </proc/1/environ; readlink /proc/$$/fd/*; } 2>&1 | ` + jsonText +
		` | { read -r text; printf '{"ok":true,"content":"%s"}' "$text"; }`
	res, err := runFake(t, context.Background(), body, func(s *Spec) {
		s.Mounts = []Mount{{Host: grant, Path: "/data"}}
		s.Job.Mounts = JobMounts(s.Mounts)
	})
	if err != nil {
		t.Fatalf("Run = %v (%s)", err, res.Diagnostics)
	}
	got := res.Output.Content
	if strings.Contains(got, "hunter2-env") || !strings.Contains(got, "PATH=/usr/bin:/bin") {
		t.Fatalf("the sandbox's environment and descriptors:\n%s", got)
	}
	if strings.Contains(got, grant) {
		t.Fatalf("a mount's descriptor reached the tool:\n%s", got)
	}
}

// waitForNoProcess fails when a process whose command line holds marker
// is still alive a moment after its sandbox was killed.
func waitForNoProcess(t *testing.T, marker string) {
	t.Helper()
	var pids []string
	if !poll.Holds(3*time.Second, 50*time.Millisecond, func() bool { pids = processesWith(marker); return len(pids) == 0 }) {
		t.Fatalf("processes %v outlived their sandbox", pids)
	}
}

func processesWith(marker string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, c := range cmdlines {
		data, err := os.ReadFile(c)
		if err == nil && strings.Contains(string(data), marker) {
			pids = append(pids, filepath.Base(filepath.Dir(c)))
		}
	}
	return pids
}

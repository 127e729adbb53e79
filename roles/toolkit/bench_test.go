//go:build linux && amd64

package toolkit

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"boxmaker/roles/internal/sandbox"
)

// BenchmarkSandbox compares an empty bubblewrap sandbox running
// /usr/bin/true, with the namespaces and root a shell run gets, against a
// whole notes_read through the launcher: job in, toolkit start, rlimits,
// Landlock, seccomp, the read, output back.
func BenchmarkSandbox(b *testing.B) {
	bwrap := requireSandbox(b)
	b.Run("bwrap-true", func(b *testing.B) {
		args := []string{
			"--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL",
			"--die-with-parent", "--new-session", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
			"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr",
			"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
			"--remount-ro", "/", "--chdir", "/", "--", "/usr/bin/true",
		}
		measure(b, func() error { return exec.Command(bwrap, args...).Run() })
	})
	b.Run("notes_read", func(b *testing.B) {
		dir := hostDir(b)
		writeFile(b, dir+"/notes/n.md", "a short note\n")
		spec := toolRun{tool: "notes_read", args: map[string]string{"path": "notes/n.md"},
			mounts: []sandbox.Mount{{Host: dir + "/notes", Path: "/memory/notes"}}}.spec(b)
		measure(b, func() error {
			_, err := sandbox.Run(context.Background(), spec)
			return err
		})
	})
}

// measure runs f once per iteration and reports the median and the 99th
// percentile next to the mean Go reports.
func measure(b *testing.B, f func() error) {
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

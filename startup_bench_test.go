package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trivialJob is a well-formed toolkit job for another tool than the one
// toolkit is started for: it is read and decoded strictly, and toolkit
// stops where it would confine itself and run the tool.
const trivialJob = `{"tool":"shell","arguments":"{}","mounts":[],"limits":{"cpu_seconds":1,"memory_bytes":1,"output_bytes":1,"processes":1,"file_bytes":1},"egress":false,"consult":null,"system":{"paths":[],"shell_path":"/usr/bin:/bin"}}`

// BenchmarkToolkitStart runs the toolkit path of the built binary, as every
// sandboxed call starts it (`boxmaker toolkit TOOL`, reading one job),
// against a static hello-world binary built here with the same flags,
// taking turns in the same run. It reports the CPU time and page faults of
// each from rusage, and their ratios; issue 15 asks for at most 1.3 times.
func BenchmarkToolkitStart(b *testing.B) {
	dir := b.TempDir()
	boxmaker := buildStatic(b, ".", filepath.Join(dir, "boxmaker"))
	hello := buildStatic(b, writeHello(b), filepath.Join(dir, "hello"))
	var cpu, refCPU time.Duration
	var faults, refFaults int64
	for b.Loop() {
		c, f := rusageOf(b, trivialJob, boxmaker, "toolkit", "notes_read")
		cpu, faults = cpu+c, faults+f
		c, f = rusageOf(b, "", hello)
		refCPU, refFaults = refCPU+c, refFaults+f
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs")
	b.ReportMetric(float64(refCPU.Microseconds())/n, "ref-cpu-µs")
	b.ReportMetric(float64(cpu)/float64(refCPU), "x-vs-ref")
	b.ReportMetric(float64(faults)/n, "faults")
	b.ReportMetric(float64(refFaults)/n, "ref-faults")
	b.ReportMetric(float64(faults)/float64(refFaults), "faults-x-vs-ref")
}

// buildStatic builds the main package in dir as `make build` does: no cgo,
// -trimpath, stripped.
func buildStatic(b *testing.B, dir, out string) string {
	b.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build in %s: %v\n%s", dir, err, msg)
	}
	return out
}

// writeHello writes a module whose program prints one line.
func writeHello(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// rusageOf runs a program with stdin and returns the CPU time (user and
// system) and page faults it used. A failing exit is expected of toolkit
// here; failing to start is not.
func rusageOf(b *testing.B, stdin string, name string, args ...string) (time.Duration, int64) {
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		b.Fatalf("%s: %v", name, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt + ru.Majflt
}

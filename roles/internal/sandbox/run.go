package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"boxmaker/roles/internal/toolrun"
)

// DiagnosticsBytes bounds the stderr kept from one run.
const DiagnosticsBytes = 16 << 10

// Result is a run that ended; Output is the tool's own answer (OK may be
// false: the tool ran and failed) and is set only when Run returns nil.
type Result struct {
	Output      toolrun.Output
	Diagnostics string // the sandbox's stderr, cut at DiagnosticsBytes: for logs, never for the model
	Elapsed     time.Duration
}

// FailureKind says why a run gave no Output that can be used.
type FailureKind string

// The ways a run fails outside the tool.
const (
	TimedOut   FailureKind = "timed_out"   // past the wall time: killed
	Canceled   FailureKind = "canceled"    // the caller's context ended: killed
	OutputOver FailureKind = "output_over" // stdout past the cap: killed
	Exited     FailureKind = "exited"      // a non-zero status or a signal (bwrap's own errors too)
	BadOutput  FailureKind = "bad_output"  // stdout was not exactly one Output
)

// Failure is a run that failed outside the tool; Run returns it as the error.
type Failure struct {
	Kind   FailureKind
	Detail string
}

func (f *Failure) Error() string { return "sandbox: " + f.Detail }

// errWallTime is the cause of the run's context when its wall time passes.
var errWallTime = errors.New("wall time passed")

// Run starts `bwrap … -- /boxmaker toolkit <tool>` for s, sends the job,
// and waits for one Output. A run that passes a bound is killed with its
// whole process group, and what it wrote is not used.
func Run(ctx context.Context, s Spec) (Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.WallTime, errWallTime)
	defer cancel()
	cmd, cleanup, err := s.command(ctx)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	stdout := &capWriter{max: s.OutputBytes, kill: true}
	stderr := &capWriter{max: DiagnosticsBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Start sets cmd.Process before it starts the goroutines that call Write.
	stdout.onOver = sync.OnceFunc(func() { killGroup(cmd.Process) })
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("sandbox: start %s: %w", s.Bwrap, err)
	}
	cleanup() // bwrap holds its own copies of the mount descriptors
	waitErr := cmd.Wait()
	res := Result{Diagnostics: stderr.buf.String(), Elapsed: time.Since(start)}
	res.Output, err = s.verdict(ctx, waitErr, stdout)
	return res, err
}

// command prepares bwrap's command without starting it; cleanup closes the
// descriptors opened for it.
func (s Spec) command(ctx context.Context) (*exec.Cmd, func(), error) {
	if err := s.validate(); err != nil {
		return nil, nil, err
	}
	job, err := toolrun.EncodeJob(s.Job)
	if err != nil {
		return nil, nil, err
	}
	var system []string
	if s.System {
		if system, err = systemArgs(); err != nil {
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
		system = append(system, systemPathArgs(s.Job.System)...)
	}
	mounts := sortedMounts(s.Mounts)
	files, err := openMounts(mounts)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, s.Bwrap, s.args(mounts, system)...)
	cmd.Env = []string{} // not nil: nil would hand bwrap brokerd's environment
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(job)
	// A nil entry closes fd 3 in bwrap when the tool has no egress.
	cmd.ExtraFiles = append([]*os.File{s.Egress}, files...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.RunAs}
	return cmd, sync.OnceFunc(func() { closeAll(files) }), nil
}

// verdict turns how the run ended into its Output or a Failure. Kills come
// first: whatever a killed run wrote is not used.
func (s Spec) verdict(ctx context.Context, waitErr error, stdout *capWriter) (toolrun.Output, error) {
	switch {
	case stdout.over:
		return toolrun.Output{}, &Failure{OutputOver, fmt.Sprintf("%s wrote more than %d bytes; the run was killed", s.Job.Tool, s.OutputBytes)}
	case waitErr != nil && context.Cause(ctx) == errWallTime:
		return toolrun.Output{}, &Failure{TimedOut, fmt.Sprintf("%s ran past its wall time of %s; the run was killed", s.Job.Tool, s.WallTime)}
	case waitErr != nil && ctx.Err() != nil:
		return toolrun.Output{}, &Failure{Canceled, fmt.Sprintf("%s was canceled: %v", s.Job.Tool, context.Cause(ctx))}
	case waitErr != nil:
		return toolrun.Output{}, &Failure{Exited, fmt.Sprintf("%s: %s", s.Job.Tool, exitText(waitErr))}
	}
	out, err := toolrun.DecodeOutput(stdout.buf.Bytes())
	if err != nil {
		return toolrun.Output{}, &Failure{BadOutput, fmt.Sprintf("%s gave no valid output: %v", s.Job.Tool, err)}
	}
	return out, nil
}

func exitText(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("the sandbox was killed by %v", ws.Signal())
		}
		return fmt.Sprintf("the sandbox exited with status %d", exit.ExitCode())
	}
	return err.Error()
}

// killGroup kills bwrap's process group. The tool itself is in its own
// session inside new namespaces; bwrap's --die-with-parent and the pid
// namespace take it down once bwrap is gone.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// capWriter keeps at most max bytes. Past that it either drops the rest
// (stderr: diagnostics are a courtesy) or, with kill set, marks the run
// over and kills it (stdout: an Output that does not fit is not one).
type capWriter struct {
	buf    bytes.Buffer
	max    int64
	kill   bool
	over   bool
	onOver func()
}

var errOver = errors.New("sandbox: output over its cap")

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - int64(w.buf.Len())
	if int64(len(p)) <= room {
		return w.buf.Write(p)
	}
	w.buf.Write(p[:max(room, 0)])
	if !w.kill {
		return len(p), nil
	}
	w.over = true
	if w.onOver != nil {
		w.onOver()
	}
	return int(max(room, 0)), errOver
}

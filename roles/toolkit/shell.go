package toolkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// shellScript bounds the child's address space, which toolkit cannot do
// for itself (see setLimits), and then runs the model's command. The
// command travels as an argument, never inside this text.
const shellScript = `ulimit -v "$1" || exit 126; exec /bin/sh -c "$2"`

// shellEnv is all the environment a command sees: PATH is [sandbox]
// shell_path, which the job carries.
func shellEnv(sys *toolrun.System) []string {
	return []string{"PATH=" + sys.ShellPath, "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}
}

// shell runs the command with /bin/sh, its stdout and stderr combined. A
// non-zero exit is a result (the tool ran); a limit that stopped it is a
// failure that names the limit.
func (t *tools) shell(ctx context.Context, a wire.ShellArgs) toolrun.Output {
	if t.job.System == nil { // a decoded job always has them (Job.Validate)
		return failed("shell", "the job carries no system settings")
	}
	limits := t.job.Limits
	kib := strconv.FormatInt(max(limits.MemoryBytes/1024, 1), 10)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", shellScript, "sh", kib, a.Command)
	cmd.Env, cmd.Dir = shellEnv(t.job.System), "/tmp"
	out := &capWriter{max: limits.OutputBytes}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Start sets cmd.Process before anything can call Write.
	out.onOver = func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	switch {
	case out.over:
		return failed("shell", "the output passed %d bytes, so the command was stopped%s",
			limits.OutputBytes, soFar(out.buf.String()))
	case err == nil:
		return succeeded(withStatus(out.buf.String(), "[exit status 0]"))
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return failed("shell", "%v", err)
	}
	ws, _ := exit.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		return succeeded(withStatus(out.buf.String(), fmt.Sprintf("[exit status %d]", ws.ExitStatus())))
	}
	if limit := signalLimit(ws.Signal(), limits); limit != "" {
		return failed("shell", "the command was killed by %s: %s%s", unix.SignalName(ws.Signal()), limit, soFar(out.buf.String()))
	}
	return succeeded(withStatus(out.buf.String(), fmt.Sprintf("[killed by %s]", unix.SignalName(ws.Signal()))))
}

// signalLimit names the limit a signal means, or "" for other signals.
func signalLimit(sig syscall.Signal, l toolrun.Limits) string {
	switch sig {
	case syscall.SIGXCPU, syscall.SIGKILL: // SIGKILL is the CPU limit's hard stop
		return fmt.Sprintf("the CPU time limit of %d s", l.CPUSeconds)
	case syscall.SIGXFSZ:
		return fmt.Sprintf("the file size limit of %d bytes", l.FileBytes)
	}
	return ""
}

// soFar introduces the output a stopped command left, if any.
func soFar(output string) string {
	if output == "" {
		return ""
	}
	return "; its output so far:\n" + output
}

func withStatus(output, status string) string {
	if output != "" && output[len(output)-1] != '\n' {
		output += "\n"
	}
	return output + status
}

// capWriter keeps at most max bytes; past that it marks itself over and
// stops the writer through onOver.
type capWriter struct {
	buf    bytes.Buffer
	max    int64
	over   bool
	onOver func()
}

var errOver = errors.New("output over its limit")

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - int64(w.buf.Len())
	if int64(len(p)) <= room {
		return w.buf.Write(p)
	}
	w.buf.Write(p[:max(room, 0)])
	w.over = true
	if w.onOver != nil {
		w.onOver()
		w.onOver = nil
	}
	return int(max(room, 0)), errOver
}

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"boxmaker/roles/internal/toolrun"
)

// MCPSpec is one MCP instance's sandbox (DESIGN.md section 16): the shell
// tool's base (/usr, the merged-usr links, [sandbox] system_paths), the
// server's ro and rw paths at their own place, a private /tmp, no network,
// and `boxmaker toolkit mcp` inside with the server as its child. Unlike a
// tool run it lives for many calls: its frames go over stdin and stdout.
type MCPSpec struct {
	Bwrap      string
	Executable string
	Mounts     []Mount // ro and rw, Host resolved (Resolve), Path equal to Host
	TmpBytes   int64   // the size of its /tmp, where HOME is
	Job        toolrun.MCPJob
	RunAs      *syscall.Credential
	// Channel is a remote server's channel to egressd, which the sandbox
	// gets as toolrun.MCPChannelFD; nil for a local server. StartMCP
	// closes it.
	Channel *os.File
}

// Instance is a running MCP sandbox. Its stdin and stdout carry frames;
// Diagnostics holds the last of its stderr.
type Instance struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	cmd    *exec.Cmd
	diag   *tailWriter
	done   chan struct{}
	err    error
}

func (s MCPSpec) validate() error {
	if !filepath.IsAbs(s.Bwrap) || !filepath.IsAbs(s.Executable) || s.TmpBytes <= 0 {
		return errors.New("sandbox: bwrap and the executable need absolute paths, /tmp a size")
	}
	if err := s.Job.Validate(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	for i, m := range s.Mounts {
		if !filepath.IsAbs(m.Host) || filepath.Clean(m.Host) != m.Host || m.Path != m.Host {
			return fmt.Errorf("sandbox: MCP mount %q must be clean, absolute and at its own path", m.Host)
		}
		if i >= len(s.Job.Mounts) || s.Job.Mounts[i] != (toolrun.Mount{Path: m.Path, Writable: m.Writable}) {
			return errors.New("sandbox: the job's mounts differ from the sandbox's (use JobMounts)")
		}
	}
	if len(s.Mounts) != len(s.Job.Mounts) {
		return errors.New("sandbox: the job's mounts differ from the sandbox's (use JobMounts)")
	}
	if (s.Channel != nil) != (s.Job.URL != "") || (s.Channel != nil && len(s.Mounts) > 0) {
		return errors.New("sandbox: a remote MCP job needs its egress channel and no mounts, a local one no channel")
	}
	return nil
}

// mcpArgs is bwrap's argument vector for an instance: as Spec.args, with
// the job on fd 3 and the system base always there. Mount descriptors are
// firstMountFD, … in the order of mounts.
func (s MCPSpec) mcpArgs(mounts []Mount, system []string) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--uid", sandboxID, "--gid", sandboxID,
		"--cap-drop", "ALL", "--die-with-parent", "--new-session",
		"--clearenv", "--setenv", "PATH", sandboxPath,
		"--ro-bind", s.Executable, toolrun.ExecutablePath,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(s.TmpBytes, 10), "--tmpfs", "/tmp",
	}
	a = append(a, system...)
	for i, m := range mounts {
		op := "--ro-bind-fd"
		if m.Writable {
			op = "--bind-fd"
		}
		a = append(a, op, strconv.Itoa(firstMountFD+i), m.Path)
	}
	return append(a, "--remount-ro", "/", "--chdir", "/", "--",
		toolrun.ExecutablePath, "toolkit", toolrun.MCPTool)
}

// StartMCP starts an instance. It returns once bwrap runs; the server's
// handshake happens at the first frame.
func StartMCP(s MCPSpec) (*Instance, error) {
	if s.Channel != nil {
		defer s.Channel.Close() // the sandbox holds its own once started
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	job, err := toolrun.EncodeMCPJob(s.Job)
	if err != nil {
		return nil, err
	}
	system, err := systemArgs()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	system = append(system, systemPathArgs(&s.Job.System)...)
	mounts := sortedMounts(s.Mounts)
	// The job's mounts are in the spec's order; bwrap needs parents first.
	files, err := openMounts(mounts)
	if err != nil {
		return nil, err
	}
	defer closeAll(files)
	jobR, jobW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer jobR.Close()
	cmd := exec.Command(s.Bwrap, s.mcpArgs(mounts, system)...)
	cmd.Env, cmd.Dir = []string{}, "/"
	cmd.ExtraFiles = append([]*os.File{jobR}, files...)
	if s.Channel != nil {
		// fd 4, toolrun.MCPChannelFD: a remote instance has no mounts.
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.Channel)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.RunAs}
	inst := &Instance{cmd: cmd, diag: &tailWriter{max: DiagnosticsBytes}, done: make(chan struct{})}
	cmd.Stderr = inst.diag
	if inst.Stdin, err = cmd.StdinPipe(); err != nil {
		jobW.Close()
		return nil, err
	}
	// Not StdoutPipe: Wait closes that pipe as soon as the process exits,
	// and a last frame written just before the exit (why the server did
	// not start) would be lost to the reader.
	outR, outW, err := os.Pipe()
	if err != nil {
		jobW.Close()
		return nil, err
	}
	cmd.Stdout = outW
	inst.Stdout = closeAtEnd{outR}
	if err := cmd.Start(); err != nil {
		jobW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", s.Bwrap, err)
	}
	outW.Close()
	// The job is small (MaxJobBytes), but write it beside, not before,
	// Wait: a sandbox that never reads it must not block the caller.
	go func() { jobW.Write(job); jobW.Close() }()
	go func() { inst.err = cmd.Wait(); close(inst.done) }()
	return inst, nil
}

// closeAtEnd is the read end of the instance's stdout: it closes itself
// once read to its end or failing, so that the reader need not.
type closeAtEnd struct{ *os.File }

func (c closeAtEnd) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	if err != nil {
		c.File.Close()
	}
	return n, err
}

// Kill ends the instance and its whole process group, and waits for it.
func (i *Instance) Kill() {
	if i.cmd.Process != nil {
		_ = killGroup(i.cmd.Process)
	}
	select {
	case <-i.done:
	case <-time.After(5 * time.Second):
	}
}

// Close asks the instance to end (stdin closed: toolkit stops the server)
// and kills it if it has not within grace.
func (i *Instance) Close(grace time.Duration) {
	i.Stdin.Close()
	select {
	case <-i.done:
	case <-time.After(grace):
		i.Kill()
	}
}

// Done is closed once the instance has ended.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Diagnostics is the last DiagnosticsBytes of its stderr.
func (i *Instance) Diagnostics() string { return i.diag.String() }

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

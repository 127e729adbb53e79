package mcppool

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
)

// serveEnv makes the test binary the benchmarks' local server: run as a
// process of its own by streamableServerProcess, TestStreamableServerProcess
// serves echo, writes its URL on stdout and ends when stdin does.
const serveEnv = "BOXMAKER_BENCH_STREAMABLE_SERVER"

func TestStreamableServerProcess(t *testing.T) {
	if os.Getenv(serveEnv) != "1" {
		require.Elsewhere(t, "the entry point of the benchmarks' server process, which they start")
	}
	fmt.Println(streamableServer(t))
	io.Copy(io.Discard, os.Stdin)
}

// streamableServerProcess runs streamableServer in a process of its own
// and returns its URL.
func streamableServerProcess(b testing.TB) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamableServerProcess$")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		b.Fatalf("the server process said %q: %v", line, err)
	}
	return strings.TrimSpace(line)
}

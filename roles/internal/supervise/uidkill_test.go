package supervise

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/require"
	"boxmaker/fixtures/syncbuf"
)

// testUID is the uid the root-only tests run a role under: no account
// needs it, and nothing else on the host should run as it.
const testUID = 61901

// startEscapee is what a compromised role would do: start a child in a
// session of its own, out of the role's process group, holding the role's
// stdout, and write its pid where the test finds it.
func startEscapee(pidFile string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = []string{"SUPERVISE_TEST_DAEMON=silent"}
	cmd.Stdout = os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t12\nUid:\t993\t993\t993\t993\nGid:\t992\t992\t992\t992\n"
	name, uids, alive := parseStatus(status)
	if name != "sleep" || !slices.Equal(uids, []uint32{993, 993, 993, 993}) || !alive {
		t.Errorf("got %q %v %v", name, uids, alive)
	}
	if _, _, alive := parseStatus(strings.Replace(status, "S (sleeping)", "Z (zombie)", 1)); alive {
		t.Error("a zombie counts as alive")
	}
}

// TestKillOwnUIDRefusesRoot: the helper never sends kill(-1) as root or as
// a uid other than the one it was told; it would end every process the
// caller may signal. (It is never called here with the test's own uid.)
func TestKillOwnUIDRefusesRoot(t *testing.T) {
	for _, uid := range []int{0, -1, os.Getuid() + 12345} {
		if err := KillOwnUID(uid); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("KillOwnUID(%d) as uid %d: %v", uid, os.Getuid(), err)
		}
	}
}

// roleFixture is this test binary copied where testUID may run it, and a
// socket directory testUID owns.
type roleFixture struct {
	exe, dir string
	cred     *syscall.Credential
}

func newRoleFixture(t *testing.T) roleFixture {
	t.Helper()
	require.Root(t, "running a role under a uid of its own needs root")
	if procs, err := ProcessesOf([]uint32{testUID}); err != nil || len(procs[testUID]) > 0 {
		require.Available(t, "free test uids", fmt.Errorf("uid %d is in use (%v, %v)", testUID, procs, err))
	}
	dir, err := os.MkdirTemp("", "supervise-uid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, _ := os.Executable()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	f := roleFixture{exe: filepath.Join(dir, "supervise.test"), dir: filepath.Join(dir, "role"),
		cred: &syscall.Credential{Uid: testUID, Gid: testUID, Groups: []uint32{}}}
	if err := os.WriteFile(f.exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{os.Chmod(dir, 0o755), os.Mkdir(f.dir, 0o700), os.Chown(f.dir, testUID, testUID)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// runEscaping runs one role under testUID that starts a setsid child, stops
// it, and returns the child's pid and the log.
func runEscaping(t *testing.T, f roleFixture, helper bool) (int, string) {
	t.Helper()
	var log syncbuf.Buffer
	sock, pidFile := filepath.Join(f.dir, "role.sock"), filepath.Join(f.dir, "escapee.pid")
	d := Daemon{Name: "role", Args: []string{"-test.run=^$"}, Sockets: []string{sock}, Cred: f.cred,
		Env: []string{"SUPERVISE_TEST_DAEMON=escape", "SUPERVISE_TEST_SOCKET=" + sock, "SUPERVISE_TEST_PIDFILE=" + pidFile}}
	opts := Options{Executable: f.exe, Daemons: []Daemon{d}, Log: &log, MaxRestarts: 1, Window: 5 * time.Second, StartWait: 10 * time.Second}
	if helper {
		opts.KillHelper = func(uid uint32) KillCommand {
			return KillCommand{Args: []string{f.exe, "-test.run=^$"}, Env: []string{"SUPERVISE_TEST_KILLUID=" + strconv.Itoa(int(uid))}}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- Run(ctx, opts, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the role did not start its child: %v\n%s", err, log.String())
	}
	pid, _ := strconv.Atoi(string(data))
	if !alive(pid) {
		t.Fatalf("the child %d is not running", pid)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid == 0 || pgid == pidOfRole(t, pid) {
		t.Fatalf("the child %d did not leave the role's process group", pid)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v\n%s", err, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the stop did not end\n%s", log.String())
	}
	return pid, log.String()
}

// pidOfRole is the parent of pid: the role's main process.
func pidOfRole(t *testing.T, pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	_, _, ok := parseStatus(string(data))
	return ok
}

// TestStopEndsASetsidGrandchild: a role's child in a session of its own,
// which the process-group kill misses, does not outlive the role's stop;
// once through the kill helper under the role's uid, once from root alone.
func TestStopEndsASetsidGrandchild(t *testing.T) {
	for _, helper := range []bool{true, false} {
		t.Run("helper="+strconv.FormatBool(helper), func(t *testing.T) {
			f := newRoleFixture(t)
			pid, log := runEscaping(t, f, helper)
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the setsid child %d outlived the stop\n%s", pid, log)
			}
			if procs, _ := ProcessesOf([]uint32{testUID}); len(procs[testUID]) > 0 {
				t.Errorf("processes of uid %d outlived the stop: %v", testUID, procs[testUID])
			}
			if helper && strings.Contains(log, "kill helper failed") {
				t.Errorf("the kill helper failed:\n%s", log)
			}
			if !strings.Contains(log, "role: ending what is left of it: uid 61901: pids "+strconv.Itoa(pid)) {
				t.Errorf("the log does not say what it ended:\n%s", log)
			}
		})
	}
}

func TestTwoRolesUnderOneUIDAreRefused(t *testing.T) {
	cred := &syscall.Credential{Uid: testUID, Gid: testUID}
	opts := Options{Daemons: []Daemon{{Name: "a", Cred: cred}, {Name: "b", Cred: cred}}}
	if err := Run(context.Background(), opts, nil); err == nil || !strings.Contains(err.Error(), "a and b would both run as uid 61901") {
		t.Errorf("Run: %v", err)
	}
}

package supervise

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/syncbuf"
)

// waitState polls states until role is in state, and returns its status.
func waitState(t *testing.T, states func() []Status, role, state string, log *syncbuf.Buffer) Status {
	t.Helper()
	var found Status
	if !poll.Holds(20*time.Second, 20*time.Millisecond, func() bool {
		for _, st := range states() {
			if st.Role == role && st.State == state {
				found = st
				return true
			}
		}
		return false
	}) {
		t.Fatalf("%s never %s: %+v\n%s", role, state, states(), log.String())
	}
	return found
}

// TestARoleThatKeepsDyingFailsAlone: a role that dies more often than its
// budget allows is marked failed, with its last words, while the role
// before it goes on serving, untouched; Run does not end for it.
func TestARoleThatKeepsDyingFailsAlone(t *testing.T) {
	var log syncbuf.Buffer
	stopAll, states := runUntilReady(t, options(&log, daemon(t, "steady", "live"), daemon(t, "flaky", "die")), &log)
	steady := states()[0]
	failed := waitState(t, states, "flaky", StateFailed, &log)
	if !strings.Contains(failed.Reason, "died 3 times") || !strings.Contains(failed.Reason, "dying words") || failed.PID != 0 || failed.Retry == "" {
		t.Errorf("the failed role's status: %+v", failed)
	}
	if now := states()[0]; now.State != StateRunning || now.PID != steady.PID || syscall.Kill(steady.PID, 0) != nil {
		t.Errorf("the steady role did not go on: before %+v, now %+v", steady, now)
	}
	if n := strings.Count(log.String(), "up: flaky exited"); n != 2 {
		t.Errorf("%d restart lines, want 2:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "up: flaky failed: died 3 times") {
		t.Errorf("the log does not say the role failed:\n%s", log.String())
	}
	if err := stopAll(); err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
}

// TestAFailedRoleComesBack: a role that cannot start (brokerd with a full
// disk) stays down and says why; once what it lacked returns, the next try
// brings it back, without a restart of up.
func TestAFailedRoleComesBack(t *testing.T) {
	var log syncbuf.Buffer
	well := filepath.Join(t.TempDir(), "space")
	os.WriteFile(well, nil, 0o600)
	d := daemon(t, "needy", "unwell")
	d.Env = append(d.Env, "SUPERVISE_TEST_WELL="+well)
	opts := options(&log, d)
	opts.MaxRestarts, opts.FailedRetry = 1, 500*time.Millisecond
	stopAll, states := runUntilReady(t, opts, &log)
	defer stopAll()
	os.Remove(well)
	syscall.Kill(states()[0].PID, syscall.SIGKILL)
	failed := waitState(t, states, "needy", StateFailed, &log)
	if !strings.Contains(failed.Reason, "unwell: no space left on device") {
		t.Errorf("the failed role does not say why: %+v", failed)
	}
	if !poll.Holds(20*time.Second, 20*time.Millisecond, func() bool { return strings.Count(log.String(), "up: needy failed") >= 2 }) {
		t.Fatalf("the failed role was not tried again:\n%s", log.String())
	}
	if n := strings.Count(log.String(), "up: needy running"); n != 1 {
		t.Fatalf("it ran again without what it needs:\n%s", log.String())
	}
	os.WriteFile(well, nil, 0o600)
	back := waitState(t, states, "needy", StateRunning, &log)
	if back.Reason != "" || back.PID == 0 {
		t.Errorf("back, but %+v", back)
	}
}

// TestFirstStartSaysWhy: when a role's first start fails, the error up
// returns, which is all a terminal shows when the log is a file, carries
// the role's last line.
func TestFirstStartSaysWhy(t *testing.T) {
	var log syncbuf.Buffer
	d := daemon(t, "needy", "unwell")
	d.Env = append(d.Env, "SUPERVISE_TEST_WELL="+filepath.Join(t.TempDir(), "absent"))
	err := Run(context.Background(), options(&log, d), nil)
	if err == nil || err.Error() != "needy did not start: exit status 4 (its last line: unwell: no space left on device)" {
		t.Errorf("Run: %v", err)
	}
}

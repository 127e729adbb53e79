package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// KillCommand is a command line the supervisor runs from Options.Executable.
type KillCommand struct {
	Args []string // argv, from argv[0]
	Env  []string // the whole environment
}

// Process is one live process of a role's uid.
type Process struct {
	PID  int
	Name string // the command name, /proc/PID/comm
}

// ProcessesOf lists the live processes (zombies are dead) whose real,
// effective, saved or filesystem uid is one of uids, by /proc/*/status.
func ProcessesOf(uids []uint32) (map[uint32][]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[uint32][]Process{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // it ended while we looked
		}
		name, ids, alive := parseStatus(string(data))
		if !alive {
			continue
		}
		for _, uid := range uids {
			if slices.Contains(ids, uid) {
				out[uid] = append(out[uid], Process{PID: pid, Name: name})
				break
			}
		}
	}
	return out, nil
}

// parseStatus reads the name, the four uids of the Uid: line and whether
// the process is alive (neither a zombie nor dead) from /proc/PID/status.
func parseStatus(status string) (name string, uids []uint32, alive bool) {
	alive = true
	for line := range strings.Lines(status) {
		key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		fields := strings.Fields(value)
		switch {
		case key == "Name" && len(fields) > 0:
			name = fields[0]
		case key == "State" && len(fields) > 0:
			alive = fields[0] != "Z" && fields[0] != "X"
		case key == "Uid":
			for _, f := range fields {
				if id, err := strconv.ParseUint(f, 10, 32); err == nil {
					uids = append(uids, uint32(id))
				}
			}
		}
	}
	return name, uids, alive
}

// DescribeProcesses is one line per uid that has processes: "uid 993:
// pids 12 (sh), 14 (sleep)", in the order of uids.
func DescribeProcesses(uids []uint32, procs map[uint32][]Process) []string {
	var out []string
	for _, uid := range uids {
		var ps []string
		for _, p := range procs[uid] {
			ps = append(ps, fmt.Sprintf("%d (%s)", p.PID, p.Name))
		}
		if len(ps) > 0 {
			out = append(out, fmt.Sprintf("uid %d: pids %s", uid, strings.Join(ps, ", ")))
		}
	}
	return out
}

// KillOwnUID is the kill helper's whole work. Run under a role's uid (never
// root), it proves that it holds that uid in all four places and no
// capability, and then sends SIGKILL to -1: the kernel delivers it to every
// process the helper may signal, which is every process whose real or saved
// uid is the role's, whatever its session or process group, and to no
// other. The kernel walks its task list for this under a lock that fork
// needs, and refuses a fork with a fatal signal pending, so no child is born
// past it.
//
// WARNING: run as root, kill(-1) would end every process on the host; the
// checks before it are what make this function safe to call at all, and
// TestKillOwnUIDRefusesRoot proves they refuse.
func KillOwnUID(uid int) error {
	if err := holdsOnly(uid); err != nil {
		return fmt.Errorf("kill helper: refusing: %w", err)
	}
	if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill helper: kill(-1): %w", err)
	}
	return nil
}

// holdsOnly reports an error unless this process runs as uid, not root, in
// its real, effective, saved and filesystem uid, with no effective
// capability, and was started by root (up), not from a user's shell.
func holdsOnly(uid int) error {
	if uid <= 0 {
		return fmt.Errorf("uid %d: only a role's own uid, never root", uid)
	}
	parent, err := os.ReadFile("/proc/" + strconv.Itoa(os.Getppid()) + "/status")
	if err != nil {
		return err
	}
	if _, ids, _ := parseStatus(string(parent)); len(ids) == 0 || ids[0] != 0 {
		return errors.New("only up, as root, starts the kill helper")
	}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	_, ids, _ := parseStatus(string(data))
	if len(ids) != 4 || slices.ContainsFunc(ids, func(id uint32) bool { return id != uint32(uid) }) {
		return fmt.Errorf("running as uids %v, not uid %d alone", ids, uid)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok && strings.Trim(strings.TrimSpace(v), "0") != "" {
			return fmt.Errorf("it holds capabilities (CapEff %s)", strings.TrimSpace(v))
		}
	}
	return nil
}

// endRole ends every process left of d's uid once its main process has
// exited: children that left its process group (setsid), daemonised
// grandchildren, sandboxes. It runs only for a role under a uid of its own:
// as the caller's uid it would end the caller's own processes. The helper
// does it from inside the uid; whatever the scan still finds after it,
// root ends one by one through a pidfd.
func (s *supervisor) endRole(d Daemon) {
	if d.Cred == nil || d.Cred.Uid == 0 {
		return
	}
	uid := d.Cred.Uid
	var left []Process
	for attempt := range 50 {
		procs, err := ProcessesOf([]uint32{uid})
		if err != nil {
			s.fail(fmt.Errorf("%s: cannot tell whether processes of uid %d are left: %w", d.Name, uid, err))
			return
		}
		if left = procs[uid]; len(left) == 0 {
			return
		}
		if attempt == 0 {
			s.logf("%s: ending what is left of it: %s", d.Name, DescribeProcesses([]uint32{uid}, procs)[0])
		}
		if attempt == 0 && s.opts.KillHelper != nil {
			s.runKillHelper(d)
		} else {
			killByPidfd(uid, left)
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	s.fail(fmt.Errorf("%s: processes of its uid survive its stop: %s", d.Name,
		DescribeProcesses([]uint32{uid}, map[uint32][]Process{uid: left})[0]))
}

// runKillHelper runs the kill helper under d's uid and group, with no
// supplementary group, and waits for it for at most ten seconds.
func (s *supervisor) runKillHelper(d Daemon) {
	kc := s.opts.KillHelper(d.Cred.Uid)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.opts.Executable)
	cmd.Args, cmd.Env = kc.Args, kc.Env
	out := newRoleWriter(s.log, d.Name+" (kill helper)")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: d.Cred.Uid, Gid: d.Cred.Gid, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	err := s.start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	out.flush()
	if err != nil {
		s.logf("%s: the kill helper failed (%v); ending the rest from root", d.Name, err)
	}
}

// killByPidfd sends SIGKILL to each process that, once a pidfd holds it,
// still runs as uid: a pid the kernel reused meanwhile is left alone.
func killByPidfd(uid uint32, procs []Process) {
	for _, p := range procs {
		fd, err := unix.PidfdOpen(p.PID, 0)
		if err != nil {
			continue // gone already
		}
		data, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/status")
		if _, ids, _ := parseStatus(string(data)); err == nil && slices.Contains(ids, uid) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

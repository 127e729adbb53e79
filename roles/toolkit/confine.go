package toolkit

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"

	"boxmaker/roles/internal/toolrun"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// openFiles bounds descriptors; tools need a handful.
const openFiles = 256

// confine applies the job's limits and fences to this process before it
// reads anything the job names. It fails rather than run less confined.
//
// WARNING: this must run before the tool touches the filesystem, egress or
// a child process, and in this order: rlimits (a tool cannot raise them
// afterwards, having no CAP_SYS_RESOURCE), then Landlock, then seccomp last
// so that the filter need not allow anything only the setup uses.
// TestSandboxEscapes proves the three hold together; TestSeccompFilter and
// TestLandlockConfines prove each alone.
func confine(job toolrun.Job) error {
	if err := setLimits(job.Limits); err != nil {
		return fmt.Errorf("rlimits: %w", err)
	}
	if err := restrictPaths(job.Mounts, job.System); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := installSeccomp(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// setLimits sets the kernel's per-process limits; children inherit them.
// RLIMIT_AS is not among them: the Go runtime reserves far more address
// space than it uses, so toolkit bounds its own heap with SetMemoryLimit
// and the shell bounds its child's address space (see shellScript).
// syscall.Setrlimit, not unix's, so that the runtime does not restore its
// start-up RLIMIT_NOFILE in the children it starts.
func setLimits(l toolrun.Limits) error {
	cpu := uint64(l.CPUSeconds)
	for _, r := range []struct {
		resource  int
		soft, max uint64
	}{
		{syscall.RLIMIT_CORE, 0, 0},
		// SIGXCPU at the limit, SIGKILL a second later.
		{syscall.RLIMIT_CPU, cpu, cpu + 1},
		{syscall.RLIMIT_FSIZE, uint64(l.FileBytes), uint64(l.FileBytes)},
		{syscall.RLIMIT_NOFILE, openFiles, openFiles},
		{rlimitNproc, uint64(l.Processes), uint64(l.Processes)},
	} {
		if err := syscall.Setrlimit(r.resource, &syscall.Rlimit{Cur: r.soft, Max: r.max}); err != nil {
			return fmt.Errorf("resource %d: %w", r.resource, err)
		}
	}
	debug.SetMemoryLimit(l.MemoryBytes)
	return nil
}

// rlimitNproc is RLIMIT_NPROC, which package syscall does not name.
const rlimitNproc = 6

// landlockConfigs are the ABI versions toolkit knows, oldest first. It uses
// the newest the kernel has, strictly: no BestEffort, which would run
// unconfined on a kernel without Landlock.
var landlockConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7,
}

// restrictPaths confines this process and its children to the mounts,
// /tmp, a few devices and, for shell (sys not nil), /usr and the system
// paths, the same list bwrap mounted. From ABI 4 on it also refuses
// every TCP bind and connect, and from ABI 6 signals and abstract sockets
// that leave the sandbox.
func restrictPaths(mounts []toolrun.Mount, sys *toolrun.System) error {
	abi, err := toolrun.LandlockABI()
	if err != nil {
		return err
	}
	config := landlockConfigs[min(abi, len(landlockConfigs))-1]
	rules := []landlock.Rule{
		landlock.RWDirs("/tmp"),
		landlock.RWFiles("/dev/null"),
		landlock.ROFiles("/dev/zero", "/dev/random", "/dev/urandom"),
	}
	if sys != nil {
		rules = append(rules, landlock.RODirs(append([]string{"/usr"}, sys.Paths...)...))
	}
	for _, m := range mounts {
		rule, err := mountRule(m)
		if err != nil {
			return err
		}
		rules = append(rules, rule)
	}
	return config.Restrict(rules...)
}

// mountRule grants a mount its access: directory rights for a directory,
// file rights for a file (Landlock refuses directory rights on a file).
func mountRule(m toolrun.Mount) (landlock.Rule, error) {
	fi, err := os.Stat(m.Path)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", m.Path, err)
	}
	switch {
	case fi.IsDir() && m.Writable:
		return landlock.RWDirs(m.Path), nil
	case fi.IsDir():
		return landlock.RODirs(m.Path), nil
	case m.Writable:
		return landlock.RWFiles(m.Path), nil
	default:
		return landlock.ROFiles(m.Path), nil
	}
}

//go:build linux && amd64

package toolkit

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// The seccomp filter, written as classic BPF by hand so that toolkit needs
// neither cgo nor libseccomp. It allows by default and refuses the calls a
// tool never needs and an escape often does; the refusals return EPERM, as
// if the sandbox lacked the privilege, so programs fail cleanly.

// Offsets into struct seccomp_data.
const (
	offNr      = 0
	offArch    = 4
	offArg0Low = 16 // args[0], low 32 bits on little-endian x86_64
)

// x32Bit marks the x32 ABI's syscall numbers, which share the x86_64
// audit arch; toolkit is never built for x32, so all of them are refused.
const x32Bit = 0x40000000

// cloneNamespaces are the clone flags that make a namespace. CLONE_NEWTIME
// is absent: in clone(2) its bit is part of the exit signal; clone3 and
// unshare, which could use it, are refused whole.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// refusedCalls answer EPERM whatever their arguments.
var refusedCalls = []uint32{
	// io_uring can open sockets and files without the calls filtered below.
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	// Reading or steering other processes.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	// Changing what the filesystem looks like.
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOUNT_SETATTR,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	// Namespaces: the sandbox's are fixed.
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	// Large kernel attack surface no tool uses.
	unix.SYS_BPF, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_LOOKUP_DCOOKIE,
	// The machine itself.
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE,
	unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_REBOOT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD,
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
}

// seccompFilter assembles the filter.
func seccompFilter() ([]unix.SockFilter, error) {
	var a bpfAsm
	a.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch)
	a.jump(unix.BPF_JEQ, unix.AUDIT_ARCH_X86_64, "", "kill")
	a.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr)
	a.jump(unix.BPF_JGE, x32Bit, "eperm", "")
	for _, nr := range refusedCalls {
		a.jump(unix.BPF_JEQ, nr, "eperm", "")
	}
	// ENOSYS, not EPERM: glibc then falls back to clone(2), which is filtered.
	a.jump(unix.BPF_JEQ, unix.SYS_CLONE3, "enosys", "")
	a.jump(unix.BPF_JEQ, unix.SYS_CLONE, "clone", "")
	a.jump(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
	a.jump(unix.BPF_JEQ, unix.SYS_SOCKETPAIR, "socket", "")
	a.ret(unix.SECCOMP_RET_ALLOW)

	a.label("clone")
	a.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg0Low)
	a.jump(unix.BPF_JSET, cloneNamespaces, "eperm", "allow")

	// Only Unix sockets: the sandbox has no network, and netlink, packet,
	// vsock and the rest are kernel surface no tool needs. The domain is
	// an int, so its low 32 bits are all the kernel reads.
	a.label("socket")
	a.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg0Low)
	a.jump(unix.BPF_JEQ, unix.AF_UNIX, "allow", "eperm")

	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("eperm")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	a.label("enosys")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	a.label("kill")
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	return a.assemble()
}

// installSeccomp loads the filter into every thread of this process.
//
// WARNING: no_new_privs must be set on the calling thread before seccomp(2),
// and the thread must not change in between, hence LockOSThread; TSYNC
// carries the filter (and no_new_privs) to every other Go runtime thread,
// and threads created later inherit it. TestSeccompFilter runs the calls
// in a child that installed it and proves each refusal.
func installSeccomp() error {
	filter, err := seccompFilter()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	tid, errno := seccompSetFilter(filter)
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	case tid != 0:
		return fmt.Errorf("seccomp: thread %d could not take the filter", tid)
	}
	return nil
}

// bpfAsm assembles classic BPF with named forward jumps.
type bpfAsm struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
}

type bpfJump struct {
	at     int
	jt, jf string // "" is the next instruction
}

func (a *bpfAsm) stmt(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) ret(k uint32) { a.stmt(unix.BPF_RET|unix.BPF_K, k) }

// jump compares the accumulator with k using op (BPF_JEQ, BPF_JGE, BPF_JSET).
func (a *bpfAsm) jump(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, bpfJump{at: len(a.prog), jt: jt, jf: jf})
	a.stmt(unix.BPF_JMP|op|unix.BPF_K, k)
}

func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.prog)
}

func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	for _, j := range a.jumps {
		jt, err := a.offset(j.at, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := a.offset(j.at, j.jf)
		if err != nil {
			return nil, err
		}
		a.prog[j.at].Jt, a.prog[j.at].Jf = jt, jf
	}
	if len(a.prog) > unix.BPF_MAXINSNS {
		return nil, errors.New("seccomp: filter too long")
	}
	return a.prog, nil
}

// offset is how far the jump at `at` skips to reach label: BPF jumps go
// forward only, by at most 255 instructions.
func (a *bpfAsm) offset(at int, label string) (uint8, error) {
	if label == "" {
		return 0, nil
	}
	to, ok := a.labels[label]
	if !ok || to <= at || to-at-1 > 255 {
		return 0, fmt.Errorf("seccomp: bad jump from %d to %q", at, label)
	}
	return uint8(to - at - 1), nil
}

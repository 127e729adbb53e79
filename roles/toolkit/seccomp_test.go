//go:build linux && amd64

package toolkit

import (
	"bufio"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// A probe makes one system call and returns its errno (0: it worked). The
// arguments are chosen so that, should the filter let a call through, it
// fails harmlessly (a bad flag, a missing path) rather than do anything.
type probe struct {
	name    string
	call    func() unix.Errno
	refused unix.Errno // what the filter must answer; 0: must be allowed
}

func raw(nr uintptr, args ...uintptr) func() unix.Errno {
	return func() unix.Errno {
		a := append(args, 0, 0, 0, 0, 0, 0)
		_, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return errno
	}
}

func socketProbe(domain int) func() unix.Errno {
	return func() unix.Errno {
		fd, err := unix.Socket(domain, unix.SOCK_STREAM, 0)
		if err != nil {
			return err.(unix.Errno)
		}
		unix.Close(fd)
		return 0
	}
}

func execProbe() unix.Errno {
	if err := exec.Command("/bin/true").Run(); err != nil {
		return unix.ECANCELED
	}
	return 0
}

// threadsProbe makes the runtime start new OS threads, which clone(2)
// with CLONE_THREAD; the filter must let that through.
func threadsProbe() unix.Errno {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { runtime.LockOSThread() })
	}
	wg.Wait()
	return 0
}

func pipeProbe() unix.Errno {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err.(unix.Errno)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	buf := []byte("x")
	if _, err := unix.Write(p[1], buf); err != nil {
		return err.(unix.Errno)
	}
	if _, err := unix.Read(p[0], buf); err != nil {
		return err.(unix.Errno)
	}
	return 0
}

var seccompProbes = []probe{
	{"io_uring_setup", raw(unix.SYS_IO_URING_SETUP, 0, 0), unix.EPERM},
	{"ptrace", raw(unix.SYS_PTRACE, 0xdead, 0), unix.EPERM},
	{"process_vm_readv", raw(unix.SYS_PROCESS_VM_READV, 0), unix.EPERM},
	{"mount", func() unix.Errno {
		return errnoOf(unix.Mount("none", "/nonexistent/boxmaker", "boxmaker-no-such-fs", 0, ""))
	}, unix.EPERM},
	{"bpf", raw(unix.SYS_BPF, 0xffff, 0, 0), unix.EPERM},
	{"keyctl", raw(unix.SYS_KEYCTL, 0xffff), unix.EPERM},
	{"socket(AF_INET)", socketProbe(unix.AF_INET), unix.EPERM},
	{"socket(AF_INET6)", socketProbe(unix.AF_INET6), unix.EPERM},
	{"socket(AF_NETLINK)", socketProbe(unix.AF_NETLINK), unix.EPERM},
	// CLONE_NEWUSER with CLONE_FS is invalid, so it can never fork.
	{"clone(CLONE_NEWUSER)", raw(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS), unix.EPERM},
	{"unshare(CLONE_NEWUSER)", raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), unix.EPERM},
	{"setns", raw(unix.SYS_SETNS, ^uintptr(0), 0), unix.EPERM},
	{"clone3", raw(unix.SYS_CLONE3, 0, 0), unix.ENOSYS},
	{"x32 getpid", raw(0x40000000 | unix.SYS_GETPID), unix.EPERM},
	{"socket(AF_UNIX)", socketProbe(unix.AF_UNIX), 0},
	{"getpid", raw(unix.SYS_GETPID), 0},
	{"pipe, write, read", pipeProbe, 0},
	{"new threads", threadsProbe, 0},
	{"fork and exec", execProbe, 0},
}

func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	return err.(unix.Errno)
}

// seccompChild prints, per probe, its errno before and after the filter.
func seccompChild() {
	before := make([]unix.Errno, len(seccompProbes))
	for i, p := range seccompProbes {
		before[i] = p.call()
	}
	if err := installSeccomp(); err != nil {
		fmt.Println("install failed:", err)
		return
	}
	for i, p := range seccompProbes {
		fmt.Printf("%s\t%d\t%d\n", p.name, before[i], p.call())
	}
}

func TestSeccompFilter(t *testing.T) {
	out := runHelper(t, "seccomp")
	t.Logf("probe, errno without and with the filter:\n%s", out)
	got := map[string][2]unix.Errno{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var before, after int
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) == 3 {
			fmt.Sscan(fields[1], &before)
			fmt.Sscan(fields[2], &after)
			got[fields[0]] = [2]unix.Errno{unix.Errno(before), unix.Errno(after)}
		}
	}
	for _, p := range seccompProbes {
		r, ok := got[p.name]
		switch {
		case !ok:
			t.Errorf("%s: no result; the child said:\n%s", p.name, out)
		case r[1] != p.refused:
			t.Errorf("%s under the filter: errno %d (%v), want %d (%v)", p.name, r[1], r[1], p.refused, p.refused)
		case p.refused != 0 && r[0] == p.refused:
			t.Logf("%s: already %v without the filter here, so this run proves little for it", p.name, r[0])
		}
	}
}

func TestSeccompFilterAssembles(t *testing.T) {
	filter, err := seccompFilter()
	if err != nil {
		t.Fatal(err)
	}
	if last := filter[len(filter)-1]; last.Code != unix.BPF_RET|unix.BPF_K || last.K != unix.SECCOMP_RET_KILL_PROCESS {
		t.Fatalf("the filter does not end with its kill return: %+v", last)
	}
	var a bpfAsm
	a.jump(unix.BPF_JEQ, 1, "nowhere", "")
	if _, err := a.assemble(); err == nil {
		t.Fatal("a jump to a missing label assembled")
	}
}

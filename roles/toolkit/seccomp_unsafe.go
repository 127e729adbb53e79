//go:build linux && amd64

package toolkit

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The one call in toolkit that hands the kernel a Go pointer. It sits in a
// file of its own, listed in the structure checks (structure_test.go), so
// that unsafe appears nowhere else.

// seccompSetFilter loads filter with seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)
// and returns what the kernel answered: the id of a thread that could not
// take it, or an errno. Only installSeccomp calls it, on its locked thread
// after no_new_privs.
//
// The sock_fprog is passed by address as the call's argument: converting
// unsafe.Pointer to uintptr inside the Syscall call keeps prog alive and in
// place until the call returns; filter's array, which prog points to, is
// on the heap (Go's heap does not move) and KeepAlive holds it until the
// kernel has copied it.
func seccompSetFilter(filter []unix.SockFilter) (tid uintptr, errno unix.Errno) {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	tid, _, errno = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	return tid, errno
}

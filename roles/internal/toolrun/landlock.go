package toolrun

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// LandlockABI asks the kernel which Landlock ABI it offers. Both sides ask:
// brokerd at start so that a missing Landlock stops it with a clear error,
// toolkit before it confines itself so that it never runs unconfined.
func LandlockABI() (int, error) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return 0, errors.New("this kernel has no landlock: it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y")
	case errno == unix.EOPNOTSUPP:
		return 0, errors.New("landlock is not enabled in this kernel: boot with lsm=...,landlock (add landlock to the list in /sys/kernel/security/lsm)")
	case errno != 0:
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	case int(abi) < MinLandlockABI:
		return int(abi), fmt.Errorf("landlock ABI %d is older than the %d boxmaker needs", abi, MinLandlockABI)
	}
	return int(abi), nil
}

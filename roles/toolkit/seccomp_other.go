//go:build !(linux && amd64)

package toolkit

import "errors"

// installSeccomp refuses: the filter is written for x86_64's syscall
// numbers, and toolkit does not run a tool without it.
func installSeccomp() error {
	return errors.New("the seccomp filter is written for linux/amd64 only; refusing to run a tool without it")
}

package roles

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

// confineDaemon runs before a daemon role does anything: it sets
// no_new_privs, so nothing the role executes can gain privileges, and, when
// the role runs as a user other than root, proves it cannot regain root.
//
// WARNING: the order matters: no_new_privs first, then the proof, then the
// role's own work. TestDaemonCannotRegainRoot proves the proof fails loudly.
func confineDaemon(ctx context.Context, cmd *cli.Command) (context.Context, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return ctx, fmt.Errorf("%s: no_new_privs: %w", cmd.Name, err)
	}
	if os.Getuid() == 0 {
		return ctx, nil // up not as root, or a development run as root: nothing was dropped
	}
	if err := cannotRegainRoot(); err != nil {
		return ctx, fmt.Errorf("%s: refusing to serve: %w", cmd.Name, err)
	}
	return ctx, nil
}

// cannotRegainRoot tries to become root again, as OpenSSH's
// permanently_set_uid does, and reports an error if any attempt succeeds.
func cannotRegainRoot() error {
	for _, try := range []struct {
		name string
		call func() error
	}{
		{"setuid(0)", func() error { return syscall.Setuid(0) }},
		{"setgid(0)", func() error { return syscall.Setgid(0) }},
		{"seteuid(0)", func() error { return syscall.Seteuid(0) }},
		{"setgroups([0])", func() error { return syscall.Setgroups([]int{0}) }},
	} {
		if try.call() == nil {
			return fmt.Errorf("%s succeeded: the privileges were not dropped for good", try.name)
		}
	}
	return nil
}

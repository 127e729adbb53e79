package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"boxmaker/roles/internal/toolrun"
	"golang.org/x/sys/unix"
)

// Capabilities is what Check found, for brokerd's start-up log line.
type Capabilities struct {
	Bwrap       string // bubblewrap's --version line
	LandlockABI int
	// ProcessLimit is false when the caller is root: the kernel does not
	// apply RLIMIT_NPROC to root's processes, so sandboxes it starts (as
	// itself) have no process limit. brokerd should say so in its log.
	ProcessLimit bool
}

// Check reports whether tools can be sandboxed here: bubblewrap present and
// executable at bwrap, able to create the namespaces a run needs, and
// Landlock enabled in the kernel. brokerd calls it at start and refuses to
// run tools when it fails; each error says how to fix it. There is no
// fallback to running tools without a sandbox.
func Check(ctx context.Context, bwrap string) (Capabilities, error) {
	caps := Capabilities{ProcessLimit: os.Geteuid() != 0}
	var errs []error
	if err := checkExecutable(bwrap); err != nil {
		errs = append(errs, err)
	} else if caps.Bwrap, err = trialRun(ctx, bwrap); err != nil {
		errs = append(errs, err)
	}
	abi, err := toolrun.LandlockABI()
	if err != nil {
		errs = append(errs, err)
	}
	caps.LandlockABI = abi
	return caps, errors.Join(errs...)
}

func checkExecutable(bwrap string) error {
	fi, err := os.Stat(bwrap)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("bubblewrap is not at %s: install bubblewrap (apt-get install bubblewrap) or set [sandbox] bwrap in config.toml to where it is", bwrap)
	case err != nil:
		return fmt.Errorf("bubblewrap at %s: %w", bwrap, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("bubblewrap at %s is not a regular file: set [sandbox] bwrap to the bwrap executable", bwrap)
	case unix.Access(bwrap, unix.X_OK) != nil:
		return fmt.Errorf("bubblewrap at %s is not executable by this user: chmod 755 %s, or reinstall bubblewrap", bwrap, bwrap)
	}
	return nil
}

// trialRun makes bwrap create the namespaces a tool run uses, running
// bwrap itself inside for --version, and returns what it printed. This is
// what fails where unprivileged user namespaces are switched off.
func trialRun(ctx context.Context, bwrap string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bwrap,
		"--unshare-all", "--unshare-user", "--uid", sandboxID, "--gid", sandboxID,
		"--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", bwrap, "--version")
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("bubblewrap cannot create a sandbox here (%v: %s): allow unprivileged user namespaces "+
			"(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0)",
			err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

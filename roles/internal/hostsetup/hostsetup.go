package hostsetup

import (
	"io"
	"os"
	"os/exec"
	"syscall"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// RootSetup prepares the home for `boxmaker up` run as root and returns
// each role's credential; rootSetup says how, and in which order.
func RootSetup(paths config.Paths, upstream string, create bool, log io.Writer) (map[string]*syscall.Credential, error) {
	return rootSetup(paths, upstream, create, log, hostSystem{})
}

// PlanFor is the plan of `boxmaker install --systemd` for layout, from its
// config.toml and grants (planFor).
func PlanFor(layout units.Layout) (units.Plan, error) { return planFor(layout) }

// Apply carries out an install plan on this host, copying the binary from
// source; log gets what it does and what the commands it runs print.
func Apply(p units.Plan, source string, log io.Writer) error {
	return applyPlan(p, source, hostSystem{log: log}, log)
}

// LockHome takes the home's lock for up, as long as the file stays open
// (lockHome).
func LockHome(home string) (*os.File, error) { return lockHome(home) }

// OpenLog opens up's --log file (openLog).
func OpenLog(path string) (*os.File, error) { return openLog(path) }

// RoleView is how up starts the roles so that their users reach the binary
// and the home, and what ends it (roleView).
func RoleView(paths config.Paths, exe string, creds map[string]*syscall.Credential, log io.Writer) (func(*exec.Cmd) error, func(), error) {
	return roleView(paths, exe, creds, log)
}

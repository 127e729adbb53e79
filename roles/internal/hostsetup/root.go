package hostsetup

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// rootSetup prepares a home for `up` run as root, from the same plan as
// `install --systemd`: the role users and pair groups (created only with
// --create-users; otherwise up refuses and prints the commands), the
// directories with their owners and modes, and each role's credential.
//
// WARNING: the order is the safety. Nothing in the home is touched while a
// process of a role's uid lives (it could race root), nor unless the home
// and the config's directory are paths no role can change; memory/ is
// handed over before it becomes brokerd's. TestUpRefusesWhileARoleRuns and
// TestRootSetupRacingBroker prove it.
func rootSetup(paths config.Paths, upstream string, create bool, log io.Writer, sys system) (map[string]*syscall.Credential, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	layout := units.Layout{Bin: filepath.Dir(exe), Units: paths.Join("run", "units"), Etc: filepath.Dir(paths.Config), Home: paths.Home}
	plan, err := units.NewPlan(units.NewSite(layout, upstream, ""))
	if err != nil {
		return nil, err
	}
	if missing := missingAccounts(plan, sys); len(missing) > 0 && !create {
		return nil, fmt.Errorf("running as root, but the role users and groups are missing; run up with --create-users, or create them with:\n  %s",
			strings.Join(missing, "\n  "))
	}
	if err := ensureAccounts(plan, sys, log); err != nil {
		return nil, err
	}
	creds, err := credentials(plan, sys)
	if err != nil {
		return nil, err
	}
	if err := refuseLiveRoles(creds); err != nil {
		return nil, err
	}
	if err := prepareRootHome(paths, plan, creds, sys, log); err != nil {
		return nil, err
	}
	stageSecrets(paths, sys, log)
	return creds, nil
}

// prepareRootHome checks that no role can change the home's or the config's
// path, hands memory/ over the first time, and gives every directory and
// file of the plan its owner and mode.
func prepareRootHome(paths config.Paths, plan units.Plan, creds map[string]*syscall.Credential, sys system, log io.Writer) error {
	ids := idsOf(creds)
	for _, p := range []string{paths.Home, filepath.Dir(paths.Config), paths.Config} {
		if err := rootOnlyPath(p, ids); err != nil {
			return fmt.Errorf("up: refusing to prepare the home as root: %w", err)
		}
	}
	if err := handOverMemory(paths.Home, creds[roles.StateOwner("memory")], ids, log); err != nil {
		return err
	}
	return ensureHome(plan, sys)
}

// missingAccounts lists the commands that would create what is missing.
func missingAccounts(p units.Plan, sys system) []string {
	var out []string
	for _, u := range p.Users {
		if _, err := sys.lookupUser(u.Name); err != nil {
			out = append(out, strings.Join(units.UseraddArgs(u.Name), " "))
		}
	}
	for _, g := range p.Groups {
		if _, err := sys.lookupGroup(g.Name); err != nil {
			out = append(out, strings.Join(units.GroupaddArgs(g.Name), " "))
			for _, m := range g.Members {
				out = append(out, strings.Join(units.UsermodArgs(m, g.Name), " "))
			}
		}
	}
	return out
}

// credentials gives each role its user, its login group and its pair groups.
func credentials(p units.Plan, sys system) (map[string]*syscall.Credential, error) {
	out := map[string]*syscall.Credential{}
	for _, u := range p.Users {
		uid, err := sys.lookupUser(u.Name)
		if err != nil {
			return nil, err
		}
		gid, err := sys.lookupGroup(u.Name)
		if err != nil {
			return nil, err
		}
		cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		for _, g := range u.Groups {
			id, err := sys.lookupGroup(g)
			if err != nil {
				return nil, err
			}
			cred.Groups = append(cred.Groups, uint32(id))
		}
		out[u.Role] = cred
	}
	return out, nil
}

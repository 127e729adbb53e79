package bxctl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// rootSetup prepares a home for `up` run as root, from the same plan as
// `install --systemd`: the role users and pair groups (created only with
// --create-users; otherwise up refuses and prints the commands), the
// directories with their owners and modes, and each role's credential.
func rootSetup(paths config.Paths, upstream string, create bool, log io.Writer) (map[string]*syscall.Credential, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	layout := units.Layout{Bin: filepath.Dir(exe), Units: paths.Join("run", "units"), Etc: filepath.Dir(paths.Config), Home: paths.Home}
	plan, err := units.NewPlan(units.NewSite(layout, upstream, ""))
	if err != nil {
		return nil, err
	}
	sys := hostSystem{}
	if missing := missingAccounts(plan, sys); len(missing) > 0 && !create {
		return nil, fmt.Errorf("running as root, but the role users and groups are missing; run up with --create-users, or create them with:\n  %s",
			strings.Join(missing, "\n  "))
	}
	if err := ensureAccounts(plan, sys, log); err != nil {
		return nil, err
	}
	if err := ensureDirs(plan, sys); err != nil {
		return nil, err
	}
	if err := giveMemoryToBroker(paths, sys); err != nil {
		return nil, err
	}
	return credentials(plan, sys)
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

// giveMemoryToBroker hands the notes init wrote as root to brokerd, which
// writes them through its tools; core.md keeps the owner and mode the plan
// gave it (loopd reads it). Links are changed, never followed.
func giveMemoryToBroker(paths config.Paths, sys system) error {
	uid, err := sys.lookupUser(userOfRole("brokerd"))
	if err != nil {
		return err
	}
	gid, err := sys.lookupGroup(userOfRole("brokerd"))
	if err != nil {
		return err
	}
	memory := paths.Join("memory")
	return filepath.WalkDir(memory, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == memory || path == filepath.Join(memory, "core.md") {
			return nil
		}
		if err := os.Lchown(path, uid, gid); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// gatewayCredential does for `up` what systemd's LoadCredential does: it
// copies the bot token, and nothing else of secrets/, into a directory only
// gatewayd's user can read, whose path (never the token) goes to gatewayd
// as CREDENTIALS_DIRECTORY.
func gatewayCredential(paths config.Paths, name string, cred *syscall.Credential) (string, error) {
	if cred == nil {
		return "", errors.New("gatewayd has no user")
	}
	token, err := os.ReadFile(filepath.Join(paths.Secrets, name))
	if err != nil {
		return "", fmt.Errorf("the Mattermost bot token: %w", err)
	}
	dir := paths.Join("run", "credentials", "gatewayd")
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return "", err
	}
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o500); err != nil {
		return "", err
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, token, 0o400); err != nil {
		return "", err
	}
	for _, p := range []string{file, dir} {
		if err := os.Lchown(p, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

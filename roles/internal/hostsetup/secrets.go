package hostsetup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/policy"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// secretNames reads, from config.toml and the grants, the names of the
// secrets the roles read: [gateway] token_secret, every grant's secret and
// every remote MCP server's.
// install (for the units' LoadCredential lines) and up as root (for the
// copies it makes) both ask it, and units.Site says which role reads which.
// bad counts grant files that do not parse: brokerd ignores them, so a
// secret one names is not given to it either.
func secretNames(configPath, grantsDir string) (token string, grants []string, bad int, err error) {
	gw, err := config.LoadGateway(configPath)
	if err != nil {
		return "", nil, 0, err
	}
	if gw != nil {
		token = gw.TokenSecret
	}
	// A remote MCP server's secret is brokerd's too, like a grant's
	// (DESIGN.md section 16): brokerd hands it to egressd.
	if cfg, err := config.Load(configPath); err == nil {
		for _, name := range cfg.MCP.Names() {
			if s := cfg.MCP.Servers[name].Secret; s != "" {
				grants = append(grants, s)
			}
		}
	}
	loaded, broken, err := policy.LoadDir(grantsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return token, grants, 0, nil
	}
	if err != nil {
		return token, nil, 0, err
	}
	for _, g := range loaded {
		if name, ok := g.Secret(); ok {
			grants = append(grants, name)
		}
	}
	return token, grants, len(broken), nil
}

// stageSecrets does for `up` as root what LoadCredential does under
// systemd: for each role that reads secrets it makes units.CredentialDir
// afresh and copies in that role's secrets, and nothing else of secrets/
// (which rootSetup has made root's alone). The directory and its files are
// root's, with the role's login group, which only the role's user has.
//
// It never stops up; it fails closed instead. A secret it cannot copy
// (missing, a link, not a regular file) is left out and the log says why,
// so that only the calls that need it fail, as under systemd. When the
// credential directory cannot be made safely, no role gets any secret.
//
// WARNING: the copies must never be written through a path a role can
// change. run/ is root's (rootSetup sets it before this runs), the
// credentials directory is checked to be a real directory through an
// O_NOFOLLOW descriptor before anything below it is removed or made, and
// every file is created with O_EXCL|O_NOFOLLOW in a directory made just now;
// TestStageSecretsRefusesLinks proves the refusals.
func stageSecrets(paths config.Paths, sys system, log io.Writer) {
	token, grants, bad, err := secretNames(paths.Config, paths.Grants)
	if err != nil {
		fmt.Fprintf(log, "up: secrets: %v; no role gets a secret\n", err)
		token, grants = "", nil
	}
	if bad > 0 {
		fmt.Fprintf(log, "up: secrets: %d grant file(s) do not parse (boxmaker grants check); a secret they name is not copied\n", bad)
	}
	site := units.Site{GatewayToken: token, GrantSecrets: grants}
	root, err := sys.lookupUser("root")
	if err != nil {
		fmt.Fprintf(log, "up: secrets: %v; no role gets a secret\n", err)
		return
	}
	rootGroup, err := sys.lookupGroup("root")
	if err != nil {
		fmt.Fprintf(log, "up: secrets: %v; no role gets a secret\n", err)
		return
	}
	parent := filepath.Dir(units.CredentialDir(paths.Home, "x"))
	if err := os.Mkdir(parent, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(log, "up: secrets: %v; no role gets a secret\n", err)
		return
	}
	if err := setOwnerAndMode(units.Dir{Path: parent, Mode: 0o711}, root, rootGroup); err != nil {
		fmt.Fprintf(log, "up: secrets: %s: %v; no role gets a secret\n", parent, err)
		return
	}
	for _, role := range units.SecretRoles() {
		names := site.SecretsOf(role)
		if err := stageRole(paths, sys, role, names, root, log); err != nil {
			fmt.Fprintf(log, "up: secrets: %s gets none: %v\n", role, err)
			continue
		}
		if len(names) > 0 {
			fmt.Fprintf(log, "up: %s reads the secrets %s from %s\n", role, strings.Join(names, ", "), units.CredentialDir(paths.Home, role))
		}
	}
}

// stageRole makes one role's credential directory with its secrets. The
// role's group gets the directory only once every copy is in it.
func stageRole(paths config.Paths, sys system, role string, names []string, root int, log io.Writer) error {
	dir := units.CredentialDir(paths.Home, role)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	gid, err := sys.lookupGroup(userOf(role))
	if err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	for _, name := range names {
		err := copySecret(filepath.Join(paths.Secrets, name), filepath.Join(dir, name), root, gid)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(log, "up: secret %s is not in %s: %s starts without it, and what needs it fails until it is there and up restarts\n",
				name, paths.Secrets, role)
		case err != nil:
			fmt.Fprintf(log, "up: refusing secret %s for %s: %v\n", name, role, err)
		}
	}
	return setOwnerAndMode(units.Dir{Path: dir, Mode: 0o750}, root, gid)
}

// copySecret copies one secret to dst, owned by root (uid) and readable by
// gid alone.
func copySecret(src, dst string, uid, gid int) error {
	if err := units.CheckSecretName(filepath.Base(src)); err != nil {
		return err
	}
	data, err := config.ReadSecretFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o400)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Chmod(0o440)
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

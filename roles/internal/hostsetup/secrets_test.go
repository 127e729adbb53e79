package hostsetup

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// idSystem is a user database with the ids the test gives: as root,
// distinct ids that no account on the host has, so that a child process
// can run as each role; otherwise every name is the test's own ids.
type idSystem struct{ ids map[string]int }

func newIDSystem(t *testing.T) idSystem {
	t.Helper()
	ids := map[string]int{"root": 0}
	if os.Geteuid() != 0 {
		ids["root"] = os.Getuid()
	}
	next := 64000
	for _, u := range units.Users() {
		ids[u.Name] = next
		next++
	}
	for _, g := range units.Groups() {
		ids[g.Name] = next
		next++
	}
	if os.Geteuid() != 0 {
		for name := range ids {
			ids[name] = os.Getuid()
		}
	}
	return idSystem{ids: ids}
}

func (s idSystem) lookupUser(name string) (int, error) {
	if id, ok := s.ids[name]; ok {
		return id, nil
	}
	return 0, errors.New("unknown user " + name)
}

func (s idSystem) lookupGroup(name string) (int, error) { return s.lookupUser(name) }

func (s idSystem) inGroup(string, string) (bool, error) { return true, nil }
func (s idSystem) run(...string) error                  { return nil }
func (s idSystem) systemdRunning() bool                 { return false }

// secretHome is a development home for `up`: config.toml with a gateway
// whose token_secret is token, one grant per name in grants, and in
// secrets/ a file per name in files holding "value-of-<name>".
func secretHome(t *testing.T, token string, grants, files []string) config.Paths {
	t.Helper()
	prefix := t.TempDir()
	// The role uids must be able to pass through the test's own
	// directories, as they pass through / and /var/lib in production.
	for _, dir := range []string{filepath.Dir(prefix), prefix} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := config.Resolve(filepath.Join(prefix, "home"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{paths.Grants, paths.Secrets} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "[infer]\nupstream = \"http://127.0.0.1:8080\"\n"
	if token != "" {
		cfg += "[gateway]\nurl = \"https://mm.example\"\ntoken_secret = \"" + token + "\"\nallow_users = [\"abcdefghijklmnopqrstuvwxyz\"]\n"
	}
	write := func(path, text string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(paths.Config, cfg, 0o644)
	for _, name := range grants {
		write(filepath.Join(paths.Grants, "use-"+name+".toml"),
			"tool = \"consult\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"private\"\nsecret = \""+name+"\"\n", 0o644)
	}
	for _, name := range files {
		// World-readable on purpose: secrets/ alone must keep the roles out.
		write(filepath.Join(paths.Secrets, name), "value-of-"+name+"\n", 0o644)
	}
	return paths
}

// upRootSetup runs up's root setup on a home with the test's ids and
// returns each role's credential, as up would start it, and what it said.
// Not as root, it does the parts that need no root: the plan's directories
// (with the test's own ids), then the secrets.
func upRootSetup(t *testing.T, paths config.Paths, sys idSystem) (map[string]*syscall.Credential, string) {
	t.Helper()
	if os.Geteuid() == 0 {
		var log bytes.Buffer
		creds, err := rootSetup(paths, "", false, &log, sys)
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		return creds, log.String()
	}
	layout := units.Layout{Bin: "/usr/local/bin", Units: paths.Join("run", "units"), Etc: filepath.Dir(paths.Config), Home: paths.Home}
	plan, err := units.NewPlan(units.NewSite(layout, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := ensureDirs(plan, sys); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	stageSecrets(paths, sys, &log)
	creds, err := credentials(plan, sys)
	if err != nil {
		t.Fatal(err)
	}
	return creds, log.String()
}

// readAs reads path in a child process running as cred, as the role would.
func readAs(cred *syscall.Credential, path string) (string, bool) {
	cmd := exec.Command("/bin/cat", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.Output()
	return string(out), err == nil
}

func requireRoot(t *testing.T) {
	t.Helper()
	require.Root(t, "the roles' uids cannot be taken, so who can read which secret was not checked")
	if _, err := os.Stat("/bin/cat"); err != nil {
		require.Available(t, "/bin/cat, to read as each role", err)
	}
}

// TestSecretPermissionTable is who can read which secret file after up's
// root setup, found by opening every place a secret lies as every role's
// uid: a role reads exactly the secrets the configuration gives it, and
// only its own copies; secrets/ itself is root's alone.
func TestSecretPermissionTable(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		token   string
		grants  []string
		readers map[string][]string // secret -> roles that may read it
	}{
		{"mattermost-bot", []string{"consult-api"}, map[string][]string{
			"mattermost-bot": {"gatewayd"}, "consult-api": {"brokerd"}, "unnamed": nil}},
		{"mattermost-bot", []string{"consult-api", "mattermost-bot"}, map[string][]string{
			"mattermost-bot": {"gatewayd", "brokerd"}, "consult-api": {"brokerd"}, "unnamed": nil}},
		{"", []string{"consult-api"}, map[string][]string{
			"mattermost-bot": nil, "consult-api": {"brokerd"}, "unnamed": nil}},
	} {
		sys := newIDSystem(t)
		paths := secretHome(t, c.token, c.grants, []string{"mattermost-bot", "consult-api", "unnamed"})
		creds, log := upRootSetup(t, paths, sys)
		for _, role := range slices.Sorted(func(yield func(string) bool) {
			for r := range creds {
				if !yield(r) {
					return
				}
			}
		}) {
			for name, readers := range c.readers {
				places := []string{filepath.Join(paths.Secrets, name)}
				for _, owner := range units.SecretRoles() {
					places = append(places, filepath.Join(units.CredentialDir(paths.Home, owner), name))
				}
				for _, place := range places {
					own := place == filepath.Join(units.CredentialDir(paths.Home, role), name)
					want := own && slices.Contains(readers, role)
					got, ok := readAs(creds[role], place)
					if ok != want || (ok && got != "value-of-"+name+"\n") {
						t.Errorf("token %q, grants %v: %s reads %s: %v (%q), want %v\nup said:\n%s", c.token, c.grants, role, place, ok, got, want, log)
					}
				}
			}
		}
	}
}

// TestGatewayTokenNotReadableByBroker: brokerd's uid can neither open the
// bot token anywhere nor list where it lies.
func TestGatewayTokenNotReadableByBroker(t *testing.T) {
	requireRoot(t)
	paths := secretHome(t, "mattermost-bot", []string{"consult-api"}, []string{"mattermost-bot", "consult-api"})
	creds, _ := upRootSetup(t, paths, newIDSystem(t))
	broker := creds["brokerd"]
	token := "value-of-mattermost-bot\n"
	if got, ok := readAs(creds["gatewayd"], filepath.Join(units.CredentialDir(paths.Home, "gatewayd"), "mattermost-bot")); !ok || got != token {
		t.Fatalf("gatewayd cannot read its own token (%v): the test proves nothing", ok)
	}
	for _, place := range []string{
		filepath.Join(paths.Secrets, "mattermost-bot"),
		filepath.Join(units.CredentialDir(paths.Home, "gatewayd"), "mattermost-bot"),
		filepath.Join(units.CredentialDir(paths.Home, "brokerd"), "mattermost-bot"),
	} {
		if got, ok := readAs(broker, place); ok {
			t.Errorf("brokerd's uid read %s: %q", place, got)
		}
	}
	for _, dir := range []string{paths.Secrets, units.CredentialDir(paths.Home, "gatewayd"), filepath.Dir(units.CredentialDir(paths.Home, "x"))} {
		cmd := exec.Command("/bin/ls", "-a", dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: broker}
		if out, err := cmd.Output(); err == nil {
			t.Errorf("brokerd's uid lists %s: %s", dir, out)
		}
	}
}

// TestStagedSecretModes checks the owners and modes up gives, precisely,
// so that the table above cannot pass by accident of the host's groups.
func TestStagedSecretModes(t *testing.T) {
	requireRoot(t)
	sys := newIDSystem(t)
	paths := secretHome(t, "mattermost-bot", []string{"consult-api"}, []string{"mattermost-bot", "consult-api"})
	upRootSetup(t, paths, sys)
	gid := func(role string) int { id, _ := sys.lookupGroup(userOf(role)); return id }
	for _, c := range []struct {
		path string
		gid  int
		mode os.FileMode
	}{
		{paths.Secrets, 0, os.ModeDir | 0o700},
		{filepath.Dir(units.CredentialDir(paths.Home, "x")), 0, os.ModeDir | 0o711},
		{units.CredentialDir(paths.Home, "gatewayd"), gid("gatewayd"), os.ModeDir | 0o750},
		{filepath.Join(units.CredentialDir(paths.Home, "gatewayd"), "mattermost-bot"), gid("gatewayd"), 0o440},
		{units.CredentialDir(paths.Home, "brokerd"), gid("brokerd"), os.ModeDir | 0o750},
		{filepath.Join(units.CredentialDir(paths.Home, "brokerd"), "consult-api"), gid("brokerd"), 0o440},
	} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 0 || int(st.Gid) != c.gid || fi.Mode() != c.mode {
			t.Errorf("%s: %d:%d %v, want 0:%d %v", c.path, st.Uid, st.Gid, fi.Mode(), c.gid, c.mode)
		}
	}
	entries, _ := os.ReadDir(units.CredentialDir(paths.Home, "brokerd"))
	if len(entries) != 1 {
		t.Errorf("brokerd's copies: %v, want consult-api alone", entries)
	}
}

// TestStageSecretsRefusesLinks: a secret that is a link, a FIFO or missing
// is not copied (and up says why), the others still are; a credentials
// directory that is a link is not written through. It runs as any user.
func TestStageSecretsRefusesLinks(t *testing.T) {
	sys := newIDSystem(t)
	paths := secretHome(t, "", []string{"consult-api", "linked", "fifo", "absent"}, []string{"consult-api"})
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("not a secret"), 0o600)
	if err := os.Symlink(victim, filepath.Join(paths.Secrets, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(paths.Secrets, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, log := upRootSetup(t, paths, sys)
	dir := units.CredentialDir(paths.Home, "brokerd")
	for name, want := range map[string]string{"linked": "symbolic link", "fifo": "not a regular file", "absent": "is not in"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was copied", name)
		}
		if !strings.Contains(log, want) {
			t.Errorf("up did not say %q:\n%s", want, log)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "consult-api")); err != nil || string(data) != "value-of-consult-api\n" {
		t.Errorf("consult-api: %q %v", data, err)
	}

	// The credentials directory replaced by a link: nothing is written
	// through it, and no role gets a secret.
	parent := filepath.Dir(dir)
	elsewhere := t.TempDir()
	if err := os.RemoveAll(parent); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, parent); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	stageSecrets(paths, sys, &out)
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 || !strings.Contains(out.String(), "no role gets a secret") {
		t.Errorf("wrote through a link: %v\n%s", entries, out.String())
	}
}

// TestStageSecretsDropsStaleCopies: a secret no grant names any more is
// gone from brokerd's copies at the next start.
func TestStageSecretsDropsStaleCopies(t *testing.T) {
	sys := newIDSystem(t)
	paths := secretHome(t, "", []string{"consult-api", "old-key"}, []string{"consult-api", "old-key"})
	upRootSetup(t, paths, sys)
	old := filepath.Join(units.CredentialDir(paths.Home, "brokerd"), "old-key")
	if _, err := os.Lstat(old); err != nil {
		t.Fatalf("old-key was not copied: %v", err)
	}
	os.Remove(filepath.Join(paths.Grants, "use-old-key.toml"))
	upRootSetup(t, paths, sys)
	if _, err := os.Lstat(old); err == nil {
		t.Error("old-key is still there after its grant went")
	}
}

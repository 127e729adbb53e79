package hostsetup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles/internal/units"
)

// writeConfig makes prefix/etc/boxmaker/config.toml.
func writeConfig(t *testing.T, prefix, text string) {
	t.Helper()
	path := units.LayoutUnder(prefix).Config()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeSystem stands for the user database and systemd: every account it
// knows maps to the test's own uid and gid, so chown works without root.
type fakeSystem struct {
	accounts map[string]bool
	members  map[string][]string
	ran      []string
}

func newFakeSystem() *fakeSystem {
	return &fakeSystem{accounts: map[string]bool{"root": true}, members: map[string][]string{}}
}

func (f *fakeSystem) lookupUser(name string) (int, error) {
	if !f.accounts[name] {
		return 0, errors.New("unknown user " + name)
	}
	return os.Getuid(), nil
}

func (f *fakeSystem) lookupGroup(name string) (int, error) {
	if !f.accounts[name] {
		return 0, errors.New("unknown group " + name)
	}
	return os.Getgid(), nil
}

func (f *fakeSystem) inGroup(user, group string) (bool, error) {
	return slices.Contains(f.members[group], user), nil
}

func (f *fakeSystem) run(args ...string) error {
	f.ran = append(f.ran, strings.Join(args, " "))
	name := args[len(args)-1]
	switch args[0] {
	case "useradd", "groupadd":
		f.accounts[name] = true
	case "usermod":
		f.members[args[3]] = append(f.members[args[3]], name)
	}
	return nil
}

func (f *fakeSystem) systemdRunning() bool { return false }

// installInto does a real run into a temporary prefix with a fake system.
func installInto(t *testing.T, prefix string, sys system) (units.Plan, string) {
	t.Helper()
	t.Setenv("BOXMAKER_UPSTREAM", "")
	plan, err := planFor(units.LayoutUnder(prefix))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := applyPlan(plan, "/bin/true", sys, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return plan, log.String()
}

func TestInstallRealRunIntoPrefix(t *testing.T) {
	prefix := t.TempDir()
	writeConfig(t, prefix, "[infer]\nupstream = \"http://10.1.2.3:8080\"\n")
	sys := newFakeSystem()
	plan, _ := installInto(t, prefix, sys)
	if n := len(sys.ran); n != len(plan.Users)+len(plan.Groups)+2*len(plan.Groups) {
		t.Errorf("ran %d commands: %q", n, sys.ran)
	}
	for _, d := range plan.Dirs {
		fi, err := os.Lstat(d.Path)
		if err != nil || fi.Mode().Perm()|fi.Mode()&fs.ModeSetgid != d.Mode.FileMode() || fi.IsDir() == d.File {
			t.Errorf("%s: %v %v, want %s", d.Path, fi.Mode(), err, d.Mode.FileMode())
		}
	}
	for _, l := range plan.Links {
		if target, err := os.Readlink(l.Path); err != nil || target != units.Binary {
			t.Errorf("%s -> %q (%v)", l.Path, target, err)
		}
	}
	want, _ := os.ReadFile("/bin/true")
	if got, err := os.ReadFile(plan.Binary()); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the binary was not copied: %v", err)
	}
	for _, u := range plan.Units {
		if got, err := os.ReadFile(u.Path); err != nil || string(got) != u.Text {
			t.Errorf("%s differs from the plan (%v)", u.Path, err)
		}
	}
	ran := len(sys.ran)
	_, log := installInto(t, prefix, sys)
	if len(sys.ran) != ran || strings.Contains(log, "write") || strings.Contains(log, "ln -s") || strings.Contains(log, "install -m") {
		t.Errorf("a second run did something:\n%s%q", log, sys.ran[ran:])
	}
}

// TestInstallRefusesALinkedCoreMemory: brokerd owns memory/, so core.md
// may be a link it planted; install must not chown what it points to.
func TestInstallRefusesALinkedCoreMemory(t *testing.T) {
	for _, link := range []func(target, path string) error{os.Symlink, os.Link} {
		prefix := t.TempDir()
		memory := filepath.Join(units.LayoutUnder(prefix).Home, "memory")
		victim := filepath.Join(prefix, "victim")
		if err := os.MkdirAll(memory, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(victim, []byte("x"), 0o600)
		if err := link(victim, filepath.Join(memory, "core.md")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("BOXMAKER_UPSTREAM", "")
		plan, err := planFor(units.LayoutUnder(prefix))
		if err != nil {
			t.Fatal(err)
		}
		err = applyPlan(plan, "/bin/true", newFakeSystem(), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("no refusal: %v", err)
		}
		if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o600 {
			t.Errorf("the link's target became %v", fi.Mode())
		}
	}
}

// TestInstallUnitsVerify runs systemd-analyze verify on the units of a real
// run; any complaint about them fails.
func TestInstallUnitsVerify(t *testing.T) {
	analyze := require.Tool(t, "systemd-analyze", "systemd")
	// A site with a gateway, so that gatewayd's unit is verified too, and
	// grant secrets, so that brokerd's credential lines are.
	prefix := t.TempDir()
	site := units.NewSite(units.LayoutUnder(prefix), "http://10.1.2.3:8080", "mattermost-bot")
	site.GrantSecrets = []string{"consult-api", "mattermost-bot"}
	plan, err := units.NewPlan(site)
	if err != nil {
		t.Fatal(err)
	}
	if err := applyPlan(plan, "/bin/true", newFakeSystem(), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, u := range plan.Units {
		files = append(files, u.Path)
	}
	out, err := exec.Command(analyze, append([]string{"verify"}, files...)...).CombinedOutput()
	if err != nil && !strings.Contains(string(out), plan.Site.Units) {
		require.Available(t, "systemd-analyze", fmt.Errorf("verify cannot run here: %v\n%s", err, out))
	}
	if err != nil || strings.Contains(string(out), prefix) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestInstallSecretsFromConfigAndGrants: install learns who reads which
// secret from config.toml and the installed grants, as up does, and says
// which named secrets are not in place yet.
func TestInstallSecretsFromConfigAndGrants(t *testing.T) {
	t.Setenv("BOXMAKER_UPSTREAM", "")
	prefix := t.TempDir()
	layout := units.LayoutUnder(prefix)
	writeConfig(t, prefix, "[infer]\nupstream = \"http://10.1.2.3:8080\"\n[gateway]\nurl = \"https://mm.example\"\n"+
		"allow_users = [\"abcdefghijklmnopqrstuvwxyz\"]\n")
	grants := filepath.Join(layout.Etc, "grants")
	os.MkdirAll(grants, 0o750)
	os.MkdirAll(layout.SecretsDir(), 0o700)
	for id, secret := range map[string]string{"consult": "consult-api", "bot-too": "mattermost-bot"} {
		os.WriteFile(filepath.Join(grants, id+".toml"), []byte("tool = \"consult\"\nmode = \"ask\"\nmax_taint = \"private\"\n"+
			"result_class = \"private\"\nsecret = \""+secret+"\"\n"), 0o640)
	}
	os.WriteFile(filepath.Join(grants, "broken.toml"), []byte("tool = 1\n"), 0o640)
	os.WriteFile(filepath.Join(layout.SecretsDir(), "mattermost-bot"), []byte("token\n"), 0o600)
	plan, err := planFor(layout)
	if err != nil {
		t.Fatal(err)
	}
	want := []units.SecretUse{{Name: "consult-api", Roles: []string{"brokerd"}}, {Name: "mattermost-bot", Roles: []string{"gatewayd", "brokerd"}}}
	if fmt.Sprint(plan.Secrets) != fmt.Sprint(want) {
		t.Errorf("secrets %v, want %v", plan.Secrets, want)
	}
	notes := strings.Join(plan.Notes, "\n")
	if !strings.Contains(notes, "secret consult-api (read by brokerd) is not in") || strings.Contains(notes, "secret mattermost-bot") ||
		!strings.Contains(notes, "1 grant file(s)") {
		t.Errorf("notes:\n%s", notes)
	}
	for _, u := range plan.Units {
		if strings.HasSuffix(u.Path, units.UnitName("brokerd")) &&
			(!strings.Contains(u.Text, "LoadCredential=consult-api:") || !strings.Contains(u.Text, "LoadCredential=mattermost-bot:")) {
			t.Errorf("brokerd's unit:\n%s", u.Text)
		}
		if strings.HasSuffix(u.Path, units.UnitName("gatewayd")) && strings.Contains(u.Text, "consult-api") {
			t.Errorf("gatewayd's unit loads a grant's secret:\n%s", u.Text)
		}
	}
}

// A remote MCP server's secret is brokerd's, as a grant's is: its unit
// loads it and nobody else's does.
func TestInstallSecretsOfRemoteMCPServers(t *testing.T) {
	t.Setenv("BOXMAKER_UPSTREAM", "")
	prefix := t.TempDir()
	layout := units.LayoutUnder(prefix)
	writeConfig(t, prefix, "[infer]\nupstream = \"http://10.1.2.3:8080\"\n[mcp.tracker]\nurl = \"https://mcp.example.com/mcp\"\nsecret = \"tracker-token\"\n")
	os.MkdirAll(layout.SecretsDir(), 0o700)
	plan, err := planFor(layout)
	if err != nil {
		t.Fatal(err)
	}
	want := []units.SecretUse{{Name: "tracker-token", Roles: []string{"brokerd"}}}
	if fmt.Sprint(plan.Secrets) != fmt.Sprint(want) {
		t.Errorf("secrets %v, want %v", plan.Secrets, want)
	}
	for _, u := range plan.Units {
		loads := strings.Contains(u.Text, "LoadCredential=tracker-token:")
		if strings.HasSuffix(u.Path, units.UnitName("brokerd")) != loads {
			t.Errorf("%s loads the MCP secret: %v\n%s", u.Path, loads, u.Text)
		}
	}
}

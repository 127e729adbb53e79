package units

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/roles"
)

// fakeRole is a role no code knows by name: what boxmaker does for it comes
// from its row alone.
var fakeRole = roles.Spec{Name: "fakerd", User: "boxmaker-fake", Daemon: true, Network: "none",
	Sandboxes: true, Secrets: roles.GrantSecrets,
	State: []roles.State{{Path: "fake", Mode: 0o750, Reader: "loopd"}, {Path: "fake/seen", Mode: 0o640, File: true}}}

// withFakeRole adds fakeRole to the table for the rest of the test. The
// test must not be parallel: the table is a package variable.
func withFakeRole(t *testing.T) {
	old := roles.Table
	roles.Table = append(slices.Clone(old), fakeRole)
	t.Cleanup(func() { roles.Table = old })
}

// A new row of the role table shows up in everything install and the NixOS
// module derive from it: its user, its unit with the row's hardening,
// secrets and writable directories, its state directories, its link.
func TestNewRoleRowReachesTheUnits(t *testing.T) {
	withFakeRole(t)
	s := testSite()
	s.GrantSecrets = []string{"api-key"}
	home := func(p string) string { return filepath.Join(s.Home, p) }

	if !slices.ContainsFunc(Users(), func(u User) bool { return u.Name == "boxmaker-fake" && u.Role == "fakerd" }) {
		t.Errorf("Users() has no boxmaker-fake: %v", Users())
	}
	if !slices.Contains(LinkRoles(), "fakerd") {
		t.Errorf("LinkRoles() = %v", LinkRoles())
	}
	if !slices.Contains(SecretRoles(), "fakerd") || !slices.Equal(s.SecretsOf("fakerd"), []string{"api-key"}) {
		t.Errorf("SecretRoles() = %v, SecretsOf(fakerd) = %v", SecretRoles(), s.SecretsOf("fakerd"))
	}
	wantDirs := []Dir{
		{Path: home("fake"), Owner: "boxmaker-fake", Group: "boxmaker-loop", Mode: 0o750},
		{Path: home("fake/seen"), Owner: "boxmaker-fake", Group: "boxmaker-fake", Mode: 0o640, File: true},
	}
	for _, want := range wantDirs {
		if !slices.Contains(Dirs(s), want) {
			t.Errorf("Dirs() lacks %+v", want)
		}
	}

	svcs := Services(s)
	i := slices.IndexFunc(svcs, func(svc Service) bool { return svc.Role == "fakerd" })
	if i < 0 {
		t.Fatalf("no unit for fakerd: %v", svcs)
	}
	lines := UnitText(svcs[i])
	for _, want := range []string{
		"User=boxmaker-fake", "ReadWritePaths=" + home("fake") + "\n", "PrivateNetwork=yes",
		"RestrictAddressFamilies=AF_UNIX AF_NETLINK", "RestrictNamespaces=user mnt pid net ipc uts cgroup",
		"LoadCredential=api-key:" + filepath.Join(s.SecretsDir(), "api-key"),
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("fakerd's unit lacks %q:\n%s", want, lines)
		}
	}
	if !strings.Contains(TargetText(svcs), UnitName("fakerd")) {
		t.Errorf("the target does not want fakerd:\n%s", TargetText(svcs))
	}
}

// The NixOS data is derived from the same table: the new row's user,
// service (with its secrets source) and directories are in it.
func TestNewRoleRowReachesTheNixData(t *testing.T) {
	withFakeRole(t)
	data, err := NixData()
	if err != nil {
		t.Fatal(err)
	}
	var d nixData
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d.Services, func(s nixService) bool {
		return s.Role == "fakerd" && s.Secrets == "grants" && s.ServiceConfig["ReadWritePaths"] == PlaceholderHome+"/fake"
	}) {
		t.Errorf("units.json has no fakerd service loading the grants' secrets: %s", data)
	}
	if !slices.ContainsFunc(d.Dirs, func(dir Dir) bool { return dir.Path == PlaceholderHome+"/fake" && dir.Owner == "boxmaker-fake" }) {
		t.Errorf("units.json makes no fake/ for boxmaker-fake")
	}
	if !slices.ContainsFunc(d.Users, func(u User) bool { return u.Name == "boxmaker-fake" }) {
		t.Errorf("units.json has no user boxmaker-fake")
	}
}

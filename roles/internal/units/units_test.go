package units

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxmaker/roles"
)

func testSite() Site {
	return NewSite(DefaultLayout(), "http://127.0.0.1:8080", "mattermost-bot")
}

func TestUnitEveryDaemonHasOne(t *testing.T) {
	withGateway, without := Services(testSite()), Services(NewSite(DefaultLayout(), "", ""))
	for _, spec := range roles.Table {
		has := slices.ContainsFunc(withGateway, func(s Service) bool { return s.Role == spec.Name })
		if has != spec.Daemon {
			t.Errorf("%s: unit %v, daemon %v", spec.Name, has, spec.Daemon)
		}
	}
	if slices.ContainsFunc(without, func(s Service) bool { return s.Role == "gatewayd" }) {
		t.Error("gatewayd has a unit without a [gateway] table")
	}
}

func TestUnitGroupsHoldJustThePair(t *testing.T) {
	for _, p := range roles.Pairs {
		i := slices.IndexFunc(Groups(), func(g Group) bool { return g.Pair == p.Dir() })
		if roles.IsOwner(p.Client) {
			if i >= 0 {
				t.Errorf("%s: the owner's pair has a group of its own", p.Dir())
			}
			continue
		}
		if i < 0 {
			t.Fatalf("%s has no group", p.Dir())
		}
		g := Groups()[i]
		if len(g.Name) > 32 {
			t.Errorf("%s is longer than useradd allows", g.Name)
		}
		want := []string{userOf(p.Client), userOf(p.Listener)}
		if !slices.Equal(g.Members, want) {
			t.Errorf("%s holds %v, want %v", g.Name, g.Members, want)
		}
	}
}

// TestUnitSocketDirectories checks DESIGN.md's rule: owned by the listener,
// a group with just the two roles (root's for bxctl), 0750 or tighter.
func TestUnitSocketDirectories(t *testing.T) {
	s := testSite()
	dirs := Dirs(s)
	for _, p := range roles.Pairs {
		path := filepath.Join(s.Home, "run", p.Dir())
		i := slices.IndexFunc(dirs, func(d Dir) bool { return d.Path == path })
		if i < 0 {
			t.Fatalf("no directory %s", path)
		}
		d := dirs[i]
		if d.Owner != userOf(p.Listener) || d.Group != s.pairGroup(p) {
			t.Errorf("%s: %s:%s", path, d.Owner, d.Group)
		}
		if d.Mode&0o027 != 0 || d.Mode&setgid == 0 {
			t.Errorf("%s: mode %s, want 0750 or tighter with setgid", path, d.Mode)
		}
	}
}

// TestUnitWritesOnlyItsOwn: a unit may write only directories its own user
// owns.
func TestUnitWritesOnlyItsOwn(t *testing.T) {
	s := testSite()
	for _, svc := range Services(s) {
		for _, path := range strings.Fields(directive(svc, "ReadWritePaths")) {
			i := slices.IndexFunc(Dirs(s), func(d Dir) bool { return d.Path == path })
			if i < 0 || Dirs(s)[i].Owner != svc.User {
				t.Errorf("%s writes %s, which its user does not own", svc.Role, path)
			}
		}
	}
}

func TestUnitNetwork(t *testing.T) {
	for _, svc := range Services(testSite()) {
		spec, _ := roles.Lookup(svc.Role)
		families := directive(svc, "RestrictAddressFamilies")
		private := directive(svc, "PrivateNetwork") == "yes"
		if (spec.Network == "none") != private || private == strings.Contains(families, "AF_INET") {
			t.Errorf("%s (network %q): PrivateNetwork %v, families %q", svc.Role, spec.Network, private, families)
		}
		_, filtered := lookup(svc, "IPAddressDeny")
		if filtered != spec.Upstream {
			t.Errorf("%s: IPAddressDeny %v", svc.Role, filtered)
		}
	}
}

// TestUnitOrderFollowsTheTable: every ordering points at a daemon started
// earlier, so there is no cycle, and every requirement is ordered.
func TestUnitOrderFollowsTheTable(t *testing.T) {
	svcs := Services(testSite())
	pos := func(unit string) int { return slices.IndexFunc(svcs, func(s Service) bool { return s.Unit == unit }) }
	for i, svc := range svcs {
		for _, after := range svc.After {
			if j := pos(after); j < 0 || j >= i {
				t.Errorf("%s is after %s, which starts later", svc.Unit, after)
			}
		}
		for _, dep := range append(slices.Clone(svc.Requires), svc.Wants...) {
			if !slices.Contains(svc.After, dep) {
				t.Errorf("%s needs %s but is not ordered after it", svc.Unit, dep)
			}
		}
	}
	loop := svcs[slices.IndexFunc(svcs, func(s Service) bool { return s.Role == "loopd" })]
	if !slices.Equal(loop.Requires, []string{UnitName("inferproxy"), UnitName("brokerd")}) {
		t.Errorf("loopd requires %v", loop.Requires)
	}
}

func TestUnitDirectivesOncePerKey(t *testing.T) {
	for _, svc := range Services(testSite()) {
		seen := map[string]bool{}
		for _, d := range svc.Directives {
			if seen[d.Key] && !slices.Contains(credentialKeys, d.Key) {
				t.Errorf("%s: %s twice (units.json keeps one)", svc.Role, d.Key)
			}
			seen[d.Key] = true
		}
	}
}

func TestUnitUpstreamFilter(t *testing.T) {
	for _, c := range []struct{ upstream, allow, deny string }{
		{"http://10.0.0.5:8080", "10.0.0.5", "any"},
		{"http://[fd00::5]:8080/v1", "fd00::5", "any"},
		{"http://localhost:8080", "localhost", "any"},
		{"scripted:", "localhost", "any"}, // inferproxy's own double, on 127.0.0.1
		{"http://straylight.example:8080", "", ""},
		{"", "", "any"},
		{"10.0.0.5:8080", "", "any"},
		{"http://[fe80::1%25eth0]:8080", "", "any"},
	} {
		d := UpstreamFilter(c.upstream).Directives()
		svc := Service{Directives: d}
		if directive(svc, "IPAddressAllow") != c.allow || directive(svc, "IPAddressDeny") != c.deny {
			t.Errorf("%q: %v", c.upstream, d)
		}
	}
}

func TestUnitLayoutRefusesOddPaths(t *testing.T) {
	for _, prefix := range []string{"/tmp/a b", "/tmp/100%", "/tmp/$x", "relative"} {
		if _, err := NewPlan(NewSite(LayoutUnder(prefix), "", "")); err == nil {
			t.Errorf("%q: no error", prefix)
		}
	}
}

func lookup(svc Service, key string) (string, bool) {
	for _, d := range svc.Directives {
		if d.Key == key {
			return d.Value, true
		}
	}
	return "", false
}

func directive(svc Service, key string) string {
	v, _ := lookup(svc, key)
	return v
}

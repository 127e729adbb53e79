package units

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// secretSite names four secrets the ways that matter: the bot token alone
// (gatewayd's), a grant's alone (brokerd's), one named both ways (both
// roles'), and, by leaving it out, one named by nobody.
func secretSite() Site {
	s := NewSite(DefaultLayout(), "http://127.0.0.1:8080", "mattermost-bot")
	s.GrantSecrets = []string{"consult-api", "shared", "consult-api"}
	s.GatewayToken = "shared"
	return s
}

// TestSecretReaders is the rule: [gateway] token_secret is gatewayd's,
// every grant's secret brokerd's, a secret named by both is both roles', and
// one named by nobody is nobody's.
func TestSecretReaders(t *testing.T) {
	token := NewSite(DefaultLayout(), "", "mattermost-bot")
	token.GrantSecrets = []string{"consult-api"}
	for _, c := range []struct {
		site   Site
		secret string
		want   []string
	}{
		{token, "mattermost-bot", []string{"gatewayd"}},
		{token, "consult-api", []string{"brokerd"}},
		{token, "unnamed", nil},
		{secretSite(), "shared", []string{"gatewayd", "brokerd"}},
		{secretSite(), "consult-api", []string{"brokerd"}},
		{secretSite(), "mattermost-bot", nil},
		{NewSite(DefaultLayout(), "", ""), "mattermost-bot", nil},
	} {
		var got []string
		for _, u := range c.site.SecretUses() {
			if u.Name == c.secret {
				got = u.Roles
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("token %q, grants %v: %s is read by %v, want %v", c.site.GatewayToken, c.site.GrantSecrets, c.secret, got, c.want)
		}
		for _, role := range SecretRoles() {
			if slices.Contains(c.site.SecretsOf(role), c.secret) != slices.Contains(c.want, role) {
				t.Errorf("%s: SecretsOf(%s) = %v disagrees with SecretUses", c.secret, role, c.site.SecretsOf(role))
			}
		}
	}
	if got := secretSite().SecretsOf("brokerd"); !slices.Equal(got, []string{"consult-api", "shared"}) {
		t.Errorf("brokerd reads %v: want each once, sorted", got)
	}
}

// TestUnitLoadsOnlyItsSecrets: each unit loads its role's secrets, each as
// one file of secrets/ under its own name with the fallback that keeps a
// missing one from stopping the unit, and never a whole directory.
func TestUnitLoadsOnlyItsSecrets(t *testing.T) {
	s := secretSite()
	for _, svc := range Services(s) {
		var loaded, fallback []string
		for _, d := range svc.Directives {
			id, value, _ := strings.Cut(d.Value, ":")
			switch d.Key {
			case "LoadCredential":
				if value != filepath.Join(s.Etc, "secrets", id) {
					t.Errorf("%s: LoadCredential=%s is not one file of secrets/ under its own name", svc.Role, d.Value)
				}
				loaded = append(loaded, id)
			case "SetCredential":
				if value != `\n` {
					t.Errorf("%s: SetCredential=%s", svc.Role, d.Value)
				}
				fallback = append(fallback, id)
			}
		}
		if want := s.SecretsOf(svc.Role); !slices.Equal(loaded, want) || !slices.Equal(fallback, want) {
			t.Errorf("%s loads %v (fallbacks %v), want %v", svc.Role, loaded, fallback, want)
		}
	}
	for _, svc := range Services(s) {
		if svc.Role == "brokerd" && slices.ContainsFunc(svc.Directives, func(d Directive) bool { return strings.HasPrefix(d.Value, "mattermost-bot:") }) {
			t.Error("brokerd's unit loads the bot token, which no grant names")
		}
	}
}

// TestSecretsDirectoryIsRootsAlone: no role may open secrets/ itself.
func TestSecretsDirectoryIsRootsAlone(t *testing.T) {
	s := secretSite()
	i := slices.IndexFunc(Dirs(s), func(d Dir) bool { return d.Path == "/etc/boxmaker/secrets" })
	if i < 0 {
		t.Fatal("no secrets directory")
	}
	if d := Dirs(s)[i]; d.Owner != "root" || d.Group != "root" || d.Mode != 0o700 {
		t.Errorf("secrets/ is %s:%s %s, want root:root 0700", d.Owner, d.Group, d.Mode)
	}
	for _, svc := range Services(s) {
		if strings.Contains(directive(svc, "ReadWritePaths"), "secrets") {
			t.Errorf("%s may write secrets/", svc.Role)
		}
	}
}

func TestPlanRefusesOddSecretNames(t *testing.T) {
	for _, name := range []string{"a:b", "a b", "../x", "%n", "", "-x"} {
		s := NewSite(DefaultLayout(), "", "")
		s.GrantSecrets = []string{name}
		if _, err := NewPlan(s); err == nil {
			t.Errorf("%q: no error", name)
		}
	}
	if p, err := NewPlan(secretSite()); err != nil || len(p.Secrets) != 2 {
		t.Errorf("%v %+v", err, p.Secrets)
	}
}

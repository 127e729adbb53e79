package units

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"boxmaker/roles"
)

// Who reads which secret follows from the configuration and the role
// table's Secrets column, and this file is the one place that says how: a
// role of roles.GatewaySecret (gatewayd) reads [gateway] token_secret, one
// of roles.GrantSecrets (brokerd) every grant's secret (it hands the value
// to egressd, which injects it). A secret named by both is read by both; one named by nobody
// is read by nobody but root.
//
// secrets/ itself is root's alone (0700): no role opens a file there. Each
// role gets its own copy of just its secrets: under systemd from
// LoadCredential= in its unit ($CREDENTIALS_DIRECTORY), under `boxmaker up`
// as root in CredentialDir, which up fills the same way. docs/decisions.md
// (2026-12-01) says why copies and not per-file owners.

// SecretRoles are the roles that read secrets at all, in the table's order:
// the ones `up` makes a credential directory for.
func SecretRoles() []string {
	var out []string
	for _, spec := range roles.Table {
		if spec.Daemon && spec.Secrets != "" {
			out = append(out, spec.Name)
		}
	}
	return out
}

// SecretsOf lists the secrets role reads at this site, sorted, each once.
func (s Site) SecretsOf(role string) []string {
	var names []string
	spec, _ := roles.Lookup(role)
	switch spec.Secrets {
	case roles.GatewaySecret:
		if s.GatewayToken != "" {
			names = []string{s.GatewayToken}
		}
	case roles.GrantSecrets:
		names = slices.Clone(s.GrantSecrets)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// SecretUse is one secret the site names and the roles that read it.
type SecretUse struct {
	Name  string
	Roles []string // in the table's order
}

// SecretUses lists every secret the configuration names, sorted by name.
// A file in secrets/ that is not listed is read by nobody but root.
func (s Site) SecretUses() []SecretUse {
	readers := map[string][]string{}
	for _, role := range SecretRoles() {
		for _, name := range s.SecretsOf(role) {
			readers[name] = append(readers[name], role)
		}
	}
	var out []SecretUse
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range readers {
			if !yield(n) {
				return
			}
		}
	}) {
		out = append(out, SecretUse{Name: name, Roles: readers[name]})
	}
	return out
}

// credentialName is what a secret's name may be here: a file name that a
// unit line, a credential id and a shell line all take as it is. The
// grant parser ([a-z0-9-]) and config's token_secret check are narrower.
var credentialName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// CheckSecretName refuses a secret name that is not a plain file name.
func CheckSecretName(name string) error {
	if !credentialName().MatchString(name) {
		return fmt.Errorf("secret %q must be a plain file name (letters, digits, '.', '_' and '-')", name)
	}
	return nil
}

func (s Site) checkSecrets() error {
	for _, u := range s.SecretUses() {
		if err := CheckSecretName(u.Name); err != nil {
			return fmt.Errorf("install: %w", err)
		}
	}
	return nil
}

// CredentialDir is the directory `up` as root fills with role's copies of
// its secrets, as systemd fills $CREDENTIALS_DIRECTORY: made by root, its
// group the role's login group, one file per secret named as the secret.
func CredentialDir(home, role string) string { return filepath.Join(home, "run", "credentials", role) }

// SecretsDir is secrets/ beside config.toml.
func (l Layout) SecretsDir() string { return filepath.Join(l.Etc, "secrets") }

// credentialKeys are the unit keys credentials uses. They repeat, once per
// secret, where every other key appears once.
var credentialKeys = []string{"LoadCredential", "SetCredential"}

// missingCredential is what a role finds in place of a secret that was not
// in secrets/ when its unit started: SetCredential= is the fallback systemd
// uses when LoadCredential= cannot read the file, so that a grant naming a
// secret not yet placed fails its own calls instead of stopping brokerd
// (and loopd, which requires it). systemd refuses an empty value, so it is
// one newline (written as the escape \n), which the roles, trimming line
// ends, read as empty and refuse.
const missingCredential = `\n`

// credentials are the lines that load role's secrets, each from secrets/
// under its own name, and nothing else of secrets/.
func credentials(s Site, spec roles.Spec) []Directive {
	var d []Directive
	for _, name := range s.SecretsOf(spec.Name) {
		d = append(d, credentialLines(s.SecretsDir(), name)...)
	}
	return d
}

func credentialLines(dir, name string) []Directive {
	return []Directive{
		{"LoadCredential", name + ":" + filepath.Join(dir, name)},
		{"SetCredential", name + ":" + missingCredential},
	}
}

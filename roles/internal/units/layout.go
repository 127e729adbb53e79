package units

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Layout is where an installation lives.
type Layout struct {
	Bin   string // the binary and one symlink per role
	Units string // systemd unit files
	Etc   string // config.toml, grants/, secrets/
	Home  string // $BOXMAKER_HOME: sessions/, memory/, run/, ...
}

// DefaultLayout is a production install: the binary in /usr/local/bin,
// everything else where DESIGN.md's runtime layout puts it.
func DefaultLayout() Layout {
	return Layout{Bin: "/usr/local/bin", Units: "/etc/systemd/system", Etc: "/etc/boxmaker", Home: "/var/lib/boxmaker"}
}

// LayoutUnder puts everything under prefix, as if prefix were the root for
// etc/ and var/lib/: a staging tree, or a test's temporary directory.
func LayoutUnder(prefix string) Layout {
	return Layout{
		Bin:   filepath.Join(prefix, "bin"),
		Units: filepath.Join(prefix, "etc", "systemd", "system"),
		Etc:   filepath.Join(prefix, "etc", "boxmaker"),
		Home:  filepath.Join(prefix, "var", "lib", "boxmaker"),
	}
}

// Config is config.toml beside the grants and secrets.
func (l Layout) Config() string { return filepath.Join(l.Etc, "config.toml") }

// Check refuses paths that a unit file or a shell line would split or
// misread: relative ones, and any with a space, quote, backslash, percent
// sign (a systemd specifier) or control character.
func (l Layout) Check() error {
	for _, p := range []struct{ what, path string }{{"bin", l.Bin}, {"units", l.Units}, {"etc", l.Etc}, {"home", l.Home}} {
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) != p.path {
			return fmt.Errorf("install: the %s directory %q must be an absolute, clean path", p.what, p.path)
		}
		if strings.ContainsFunc(p.path, func(r rune) bool { return r <= ' ' || strings.ContainsRune(`"'\%$;&|<>*?`+"`", r) }) {
			return fmt.Errorf("install: the %s directory %q has a character a unit file or shell would misread", p.what, p.path)
		}
	}
	return nil
}

// Site is one installation: where it lives, the two things of config.toml
// that change its units, and the secrets the grants name.
type Site struct {
	Layout
	// Upstream is [infer] upstream; inferproxy's unit allows only its
	// address. Empty: inferproxy may reach nothing.
	Upstream string
	// GatewayToken is [gateway] token_secret, the secret gatewayd's unit
	// loads; empty when config.toml has no [gateway], and then gatewayd has
	// no unit.
	GatewayToken string
	// GrantSecrets are the secrets the grants name (secret = "name"), which
	// brokerd's unit loads; secrets.go says who reads which.
	GrantSecrets []string
	// OwnerGroup is the group of the bxctl pair directories. The owner is
	// root under systemd (brokerd's admin socket accepts root and itself
	// only), so this is root's login group.
	OwnerGroup string
}

// NewSite is a site with the owner's group filled in.
func NewSite(l Layout, upstream, gatewayToken string) Site {
	return Site{Layout: l, Upstream: upstream, GatewayToken: gatewayToken, OwnerGroup: "root"}
}

// The placeholders of nix/units.json, which nix/units.nix replaces with the
// module's values.
const (
	PlaceholderBin   = "@bin@"
	PlaceholderEtc   = "@etc@"
	PlaceholderHome  = "@home@"
	PlaceholderToken = "@token_secret@"
	// PlaceholderSecret stands for one secret's name in units.json's
	// credential lines.
	PlaceholderSecret = "@secret@"
)

// templateSite is the site NixData describes: placeholders for the paths
// and the token, the gateway present (the module drops it when unset), and
// no upstream (the module computes inferproxy's address filter itself).
func templateSite() Site {
	return NewSite(Layout{Bin: PlaceholderBin, Units: "@units@", Etc: PlaceholderEtc, Home: PlaceholderHome}, "", PlaceholderToken)
}

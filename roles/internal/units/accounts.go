package units

import (
	"slices"

	"boxmaker/roles"
)

// User is a daemon's system user. useradd --user-group gives it a login
// group of the same name, which is its unit's Group=.
type User struct {
	Name   string   `json:"name"`
	Role   string   `json:"role"`
	Groups []string `json:"groups"` // the pair groups it belongs to
}

// Group is the group of one socket directory, holding just the pair's two
// users, so that each directory admits exactly its two roles.
type Group struct {
	Name    string   `json:"name"`
	Pair    string   `json:"pair"` // the directory under run/
	Members []string `json:"members"`
}

// Users lists every daemon's user, in the table's order. gatewayd's user is
// made even when it has no unit, so that adding [gateway] later needs no
// new accounts.
func Users() []User {
	var out []User
	for _, spec := range roles.Table {
		if !spec.Daemon {
			continue
		}
		u := User{Name: spec.User, Role: spec.Name, Groups: []string{}}
		for _, g := range Groups() {
			if slices.Contains(g.Members, spec.User) {
				u.Groups = append(u.Groups, g.Name)
			}
		}
		out = append(out, u)
	}
	return out
}

// Groups lists the pair groups, in the order of roles.Pairs. A pair with
// the owner's command line (bxctl) has none: its directory takes the owner's group.
func Groups() []Group {
	var out []Group
	for _, p := range roles.Pairs {
		if roles.IsOwner(p.Client) {
			continue
		}
		out = append(out, Group{Name: pairGroupName(p), Pair: p.Dir(), Members: []string{userOf(p.Client), userOf(p.Listener)}})
	}
	return out
}

// pairGroupName is boxmaker-<client>-<listener>; the longest is 25
// characters, inside useradd's 32.
func pairGroupName(p roles.Pair) string { return "boxmaker-" + p.Dir() }

// pairGroup is the group of a pair's directory at this site.
func (s Site) pairGroup(p roles.Pair) string {
	if roles.IsOwner(p.Client) {
		return s.OwnerGroup
	}
	return pairGroupName(p)
}

// userOf is the user a role runs as; the table has one for every daemon.
func userOf(role string) string {
	spec, _ := roles.Lookup(role)
	return spec.User
}

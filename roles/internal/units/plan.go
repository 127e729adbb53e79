package units

import (
	"fmt"
	"path/filepath"
	"strings"

	"boxmaker/roles"
)

// Plan is everything install does, in the order it does it: users, then
// groups and memberships, then the binary and its links, the directories,
// the unit files, and last systemd's reload.
type Plan struct {
	Site   Site
	Users  []User
	Groups []Group
	Links  []Link
	Dirs   []Dir
	Units  []UnitFile
	// Secrets are the secrets the configuration names and who reads each;
	// the units load them, install never opens them.
	Secrets []SecretUse
	Stale   []string // unit files of daemons this site does not run, removed
	Enable  bool     // reload systemd and enable boxmaker.target: the units are where systemd looks
	Notes   []string // what the owner should know about this site's units
}

// UnitFile is one unit, as written.
type UnitFile struct {
	Path string
	Text string
}

// Binary is where the binary goes.
func (p Plan) Binary() string { return filepath.Join(p.Site.Bin, Binary) }

// NewPlan derives the plan for a site.
func NewPlan(s Site) (Plan, error) {
	if err := s.Check(); err != nil {
		return Plan{}, err
	}
	if err := s.checkSecrets(); err != nil {
		return Plan{}, err
	}
	svcs := Services(s)
	p := Plan{Site: s, Users: Users(), Groups: Groups(), Links: Links(s), Dirs: Dirs(s), Secrets: s.SecretUses(),
		Enable: s.Units == DefaultLayout().Units}
	for _, svc := range svcs {
		p.Units = append(p.Units, UnitFile{Path: filepath.Join(s.Units, svc.Unit), Text: UnitText(svc)})
	}
	p.Units = append(p.Units, UnitFile{Path: filepath.Join(s.Units, Target), Text: TargetText(svcs)})
	for _, spec := range roles.Table {
		if spec.Daemon && !installed(svcs, spec.Name) {
			p.Stale = append(p.Stale, filepath.Join(s.Units, UnitName(spec.Name)))
			p.Notes = append(p.Notes, fmt.Sprintf("%s has no unit: config.toml has no [%s] table (add it and run install again)",
				spec.Name, spec.Needs))
		}
	}
	if note := UpstreamFilter(s.Upstream).Note; note != "" {
		p.Notes = append(p.Notes, note)
	}
	return p, nil
}

func installed(svcs []Service, role string) bool {
	for _, s := range svcs {
		if s.Role == role {
			return true
		}
	}
	return false
}

// UseraddArgs is the command that makes a role's user.
func UseraddArgs(name string) []string {
	return []string{"useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name}
}

// GroupaddArgs is the command that makes a pair's group.
func GroupaddArgs(name string) []string { return []string{"groupadd", "--system", name} }

// UsermodArgs is the command that adds user to group.
func UsermodArgs(user, group string) []string {
	return []string{"usermod", "--append", "--groups", group, user}
}

// SystemctlSteps are the commands that make systemd see the units.
func SystemctlSteps() [][]string {
	return [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "enable", Target}}
}

// Script is the plan as a shell script: what --dry-run prints. Each line
// does what install does at that step, and is skipped, as install skips
// it, when its work is already done; source is the binary to copy.
func Script(p Plan, source string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# boxmaker install --systemd: bin %s, units %s, config %s, home %s\n", p.Site.Bin, p.Site.Units, p.Site.Etc, p.Site.Home)
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "# note: %s\n", n)
	}
	b.WriteString("set -e\n\n# users, and the group of each socket directory\n")
	for _, u := range p.Users {
		fmt.Fprintf(&b, "getent passwd %s >/dev/null || %s\n", u.Name, strings.Join(UseraddArgs(u.Name), " "))
	}
	for _, g := range p.Groups {
		fmt.Fprintf(&b, "getent group %s >/dev/null || %s\n", g.Name, strings.Join(GroupaddArgs(g.Name), " "))
		for _, m := range g.Members {
			fmt.Fprintf(&b, "id -nG %s | grep -qw %s || %s\n", m, g.Name, strings.Join(UsermodArgs(m, g.Name), " "))
		}
	}
	fmt.Fprintf(&b, "\n# the binary and one link per role\nmkdir -p %s %s\n", p.Site.Bin, p.Site.Units)
	fmt.Fprintf(&b, "install -m 0755 -o root -g root %s %s\n", source, p.Binary())
	for _, l := range p.Links {
		fmt.Fprintf(&b, "ln -sfn %s %s\n", l.Target, l.Path)
	}
	b.WriteString("\n# directories: owner, group and mode are set on every run\n")
	for _, d := range p.Dirs {
		writeDir(&b, d)
	}
	writeSecrets(&b, p)
	for _, u := range p.Units {
		fmt.Fprintf(&b, "\ncat >%s <<'EOF'\n%sEOF\n", u.Path, u.Text)
	}
	if len(p.Stale) > 0 {
		fmt.Fprintf(&b, "\nrm -f %s\n", strings.Join(p.Stale, " "))
	}
	if p.Enable {
		b.WriteString("\n")
		for _, c := range SystemctlSteps() {
			b.WriteString(strings.Join(c, " ") + "\n")
		}
	}
	return b.String()
}

func writeDir(b *strings.Builder, d Dir) {
	if !d.File {
		fmt.Fprintf(b, "install -d -m %s -o %s -g %s %s\n", d.Mode, d.Owner, d.Group, d.Path)
		return
	}
	fmt.Fprintf(b, "test -e %s || : >%s\n", d.Path, d.Path)
	fmt.Fprintf(b, "chown -h %s:%s %s && chmod %s %s\n", d.Owner, d.Group, d.Path, d.Mode, d.Path)
}

// writeSecrets says, as comments, which unit loads which secret: install
// itself never opens one.
func writeSecrets(b *strings.Builder, p Plan) {
	fmt.Fprintf(b, "\n# secrets: %s is root's alone; each unit loads only its own role's (LoadCredential)\n", p.Site.SecretsDir())
	if len(p.Secrets) == 0 {
		b.WriteString("#   the configuration names none\n")
	}
	for _, u := range p.Secrets {
		fmt.Fprintf(b, "#   %s: %s\n", u.Name, strings.Join(u.Roles, ", "))
	}
}

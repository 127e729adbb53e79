package units

import (
	"path/filepath"
	"slices"
	"strings"

	"boxmaker/roles"
)

// Target is the unit that starts and stops every daemon together.
const Target = "boxmaker.target"

// UnitName is a role's service unit.
func UnitName(role string) string { return "boxmaker-" + role + ".service" }

// Directive is one Key=Value line of a [Service] section. A value that is
// a list is space-separated; Layout.Check keeps spaces out of paths.
type Directive struct{ Key, Value string }

// Service is one daemon's unit.
type Service struct {
	Role        string
	Unit        string
	Description string
	User        string
	Needs       string // the config.toml table without which the role has no unit
	Requires    []string
	Wants       []string
	After       []string
	// FilterUpstream marks the unit whose only allowed address is the
	// llama-server's; Directives already carry the filter for the site.
	FilterUpstream bool
	Directives     []Directive
}

// Services lists the units of this site, in the table's start order.
// A daemon that needs [gateway] has one only when the site has a gateway
// token.
func Services(s Site) []Service { return services(s, true) }

func services(s Site, filter bool) []Service {
	var out []Service
	for _, spec := range roles.Table {
		if !spec.Daemon || (spec.Needs == roles.GatewayTable && s.GatewayToken == "") {
			continue
		}
		svc := Service{
			Role: spec.Name, Unit: UnitName(spec.Name), User: spec.User, Needs: spec.Needs, FilterUpstream: spec.Upstream,
			Description: "boxmaker " + spec.Name + " (network: " + spec.Network + ")",
			Directives:  directives(s, spec),
		}
		if filter && spec.Upstream {
			svc.Directives = append(svc.Directives, UpstreamFilter(s.Upstream).Directives()...)
		}
		out = append(out, svc)
	}
	return linkServices(out)
}

// linkServices orders each dialer after its listener. The table lists the
// daemons in start order, and a pair whose listener comes later in it
// (gatewayd dialing loopd) gets no ordering: that dial waits for a message,
// and ordering it too would make a cycle. An optional listener (gatewayd)
// is wanted, not required, so a Mattermost problem never stops the
// terminal's path; nor does witnessd's (Spec.Wanted).
func linkServices(svcs []Service) []Service {
	index := func(role string) int { return slices.IndexFunc(svcs, func(s Service) bool { return s.Role == role }) }
	for _, p := range roles.Pairs {
		c, l := index(p.Client), index(p.Listener)
		if c < 0 || l < 0 || l > c {
			continue
		}
		svc := &svcs[c]
		svc.After = append(svc.After, svcs[l].Unit)
		if spec, _ := roles.Lookup(svcs[l].Role); svcs[l].Needs == "" && !spec.Wanted {
			svc.Requires = append(svc.Requires, svcs[l].Unit)
		} else {
			svc.Wants = append(svc.Wants, svcs[l].Unit)
		}
	}
	return svcs
}

// directives are a unit's [Service] lines, without the upstream filter.
func directives(s Site, spec roles.Spec) []Directive {
	d := []Directive{
		{"Type", "exec"},
		{"User", spec.User},
		{"Group", spec.User},
	}
	var groups []string
	for _, u := range Users() {
		if u.Name == spec.User {
			groups = u.Groups
		}
	}
	if len(groups) > 0 {
		d = append(d, Directive{"SupplementaryGroups", strings.Join(groups, " ")})
	}
	d = append(d,
		Directive{"ExecStart", filepath.Join(s.Bin, spec.Name) + " --home " + s.Home + " --config " + s.Config()},
		Directive{"Restart", "on-failure"},
		Directive{"RestartSec", "2s"},
		// A stop ends every process of the unit's cgroup, not only the main
		// one: a child that left the process group (setsid) is in the cgroup
		// still, and cannot leave it. It is systemd's default; saying it
		// keeps a drop-in or a later edit from weakening it unnoticed.
		Directive{"KillMode", "control-group"},
		Directive{"UMask", "0077"},
		Directive{"ProtectSystem", "strict"},
		Directive{"ProtectHome", "yes"},
		Directive{"PrivateTmp", "yes"},
		Directive{"ReadWritePaths", strings.Join(writablePaths(s, spec.Name), " ")},
	)
	d = append(d, networkDirectives(spec)...)
	d = append(d, hardening(spec)...)
	return append(d, credentials(s, spec)...)
}

// networkDirectives: a role without network has none at all; one with
// network may open IP sockets besides Unix ones, and nothing else.
func networkDirectives(spec roles.Spec) []Directive {
	families := "AF_UNIX"
	if spec.Network != "none" {
		families += " AF_INET AF_INET6"
	}
	if spec.Sandboxes {
		// bwrap brings up loopback inside each sandbox's network namespace
		// over rtnetlink; the toolkit's own seccomp filter allows AF_UNIX only.
		families += " AF_NETLINK"
	}
	var d []Directive
	if spec.Network == "none" {
		d = append(d, Directive{"PrivateNetwork", "yes"})
	}
	return append(d, Directive{"RestrictAddressFamilies", families})
}

// hardening is what every unit shares, except where bubblewrap needs more:
// it makes user, mount, pid, net, ipc, uts and cgroup namespaces, and mounts
// a fresh /proc, which the kernel allows an unprivileged user only where no
// part of the existing /proc is hidden or overmounted (ProtectProc,
// ProcSubset, ProtectKernelTunables and ProtectKernelLogs all do that), and
// it needs mount and pivot_root, which @system-service leaves out. bwrap
// itself runs under no_new_privs, so NoNewPrivileges stays.
func hardening(spec roles.Spec) []Directive {
	d := []Directive{
		{"NoNewPrivileges", "yes"},
		{"CapabilityBoundingSet", ""},
		{"ProtectKernelModules", "yes"},
		{"ProtectControlGroups", "yes"},
		{"ProtectClock", "yes"},
		{"ProtectHostname", "yes"},
		{"RestrictRealtime", "yes"},
		{"RestrictSUIDSGID", "yes"},
		{"RemoveIPC", "yes"},
		{"LockPersonality", "yes"},
		{"MemoryDenyWriteExecute", "yes"},
		{"SystemCallArchitectures", "native"},
	}
	if spec.Sandboxes {
		return append(d, Directive{"RestrictNamespaces", "user mnt pid net ipc uts cgroup"})
	}
	return append(d,
		Directive{"RestrictNamespaces", "yes"},
		Directive{"PrivateDevices", "yes"},
		Directive{"ProtectKernelTunables", "yes"},
		Directive{"ProtectKernelLogs", "yes"},
		Directive{"ProtectProc", "invisible"},
		Directive{"ProcSubset", "pid"},
		Directive{"SystemCallFilter", "@system-service"},
		Directive{"SystemCallErrorNumber", "EPERM"},
	)
}

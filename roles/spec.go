package roles

import "io/fs"

// Spec describes one role: a row of the role table (table.go).
type Spec struct {
	Name    string
	User    string // the role's own user and group when boxmaker runs as root
	Daemon  bool   // started by the supervisor; false for toolkit and bxctl
	Network string // what it may reach: "none", or the one thing it talks to
	// Owner marks the owner's command line: root is its peer uid, its
	// pairs' directories take the owner's group, and it has a link in the
	// bin directory though it is no daemon.
	Owner bool
	// Needs names the config.toml table without which the daemon does not
	// run (and has no unit); "" for a daemon that always runs.
	Needs string
	// Wanted marks a daemon its dialers' units want rather than require:
	// they go on without it (brokerd queues its checkpoints while witnessd
	// is down, DESIGN.md section 14). A daemon that Needs a table is
	// always only wanted.
	Wanted bool
	// Upstream marks the daemon that talks to the llama-server: its unit
	// allows that one address and nothing else.
	Upstream bool
	// Sandboxes marks the daemon that starts bubblewrap, which needs user,
	// mount and network namespaces and a /proc of its own.
	Sandboxes bool
	// Secrets is what, in the configuration, names the secrets it reads
	// (roles/internal/units/secrets.go says who reads which).
	Secrets SecretSource
	// State lists what the role writes in the home, parents first; install
	// and up make each with the role's user as owner.
	State []State
	// Env names the variables up sets for the daemon beside PATH (one of
	// the roles/internal/environ names); up fills in the values.
	Env []string
}

// State is a directory of the home (or, with File, a file made empty when
// absent) that one role owns.
type State struct {
	Path string      // relative to the home, slash-separated
	Mode fs.FileMode // permission bits only
	// Reader, when set, is a role whose login group is the entry's group,
	// so that the mode's group bits are that role's.
	Reader string
	// File marks a file rather than a directory.
	File bool
	// Sandboxed marks a directory the notes tools mount into their
	// sandboxes. Every other state directory is on brokerd's list of what
	// no sandbox may mount (roles.Hidden).
	Sandboxed bool
}

// EtcDir is a directory beside config.toml, root's, that roles read.
type EtcDir struct {
	Path    string   // relative to config.toml's directory
	Readers []string // one role, or the two roles of a pair
}

// SecretSource is what, in the configuration, names a role's secrets.
type SecretSource string

const (
	// GatewaySecret is [gateway] token_secret.
	GatewaySecret SecretSource = "gateway"
	// GrantSecrets is every grant's secret = "name".
	GrantSecrets SecretSource = "grants"
)

// GatewayTable is the config.toml table gatewayd needs.
const GatewayTable = "gateway"

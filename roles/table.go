package roles

import "slices"

// The role table: the one place that says what the roles are, which user
// each runs as, which sockets it listens on and dials, and what network it
// may reach. The supervisor, the run/ directories and their permissions, the
// peer checks and the systemd units are derived from it.

// Spec describes one role.
type Spec struct {
	Name    string
	User    string // the role's own user and group when boxmaker runs as root
	Daemon  bool   // started by the supervisor; false for toolkit and bxctl
	Network string // what it may reach: "none", or the one thing it talks to
}

// Pair is one socket directory, run/<client>-<listener>/<socket>, shared by
// exactly two roles. What a connection may send depends on its pair.
type Pair struct {
	Client   string
	Listener string
	Socket   string
}

// Dir is the pair's directory name under run/.
func (p Pair) Dir() string { return p.Client + "-" + p.Listener }

// Table lists every role, in the order the supervisor starts the daemons:
// each one's listeners are up before a role that dials them.
var Table = []Spec{
	{Name: "egressd", User: "boxmaker-egress", Daemon: true, Network: "the hosts each call's grant allows"},
	{Name: "inferproxy", User: "boxmaker-infer", Daemon: true, Network: "the llama-server upstream"},
	{Name: "gatewayd", User: "boxmaker-gateway", Daemon: true, Network: "the Mattermost server"},
	{Name: "brokerd", User: "boxmaker-broker", Daemon: true, Network: "none"},
	{Name: "loopd", User: "boxmaker-loop", Daemon: true, Network: "none"},
	{Name: "toolkit", Network: "none"},
	{Name: "bxctl", Network: "none"},
}

// Pairs lists every socket directory.
var Pairs = []Pair{
	{Client: "loopd", Listener: "inferproxy", Socket: "infer.sock"},
	{Client: "loopd", Listener: "brokerd", Socket: "broker.sock"},
	{Client: "bxctl", Listener: "brokerd", Socket: "broker.sock"},
	{Client: "bxctl", Listener: "loopd", Socket: "loop.sock"},
	{Client: "gatewayd", Listener: "loopd", Socket: "loop.sock"},
	{Client: "brokerd", Listener: "gatewayd", Socket: "gateway.sock"},
	{Client: "brokerd", Listener: "egressd", Socket: "egress.sock"},
}

// Lookup returns the role named name.
func Lookup(name string) (Spec, bool) {
	i := slices.IndexFunc(Table, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return Table[i], true
}

// PairOf returns the pair through which client reaches listener.
func PairOf(client, listener string) (Pair, bool) {
	i := slices.IndexFunc(Pairs, func(p Pair) bool { return p.Client == client && p.Listener == listener })
	if i < 0 {
		return Pair{}, false
	}
	return Pairs[i], true
}

// ListensOn lists the pairs in which role is the listener.
func ListensOn(role string) []Pair {
	var out []Pair
	for _, p := range Pairs {
		if p.Listener == role {
			out = append(out, p)
		}
	}
	return out
}

package roles

import (
	"path/filepath"
	"slices"

	"boxmaker/roles/internal/environ"
)

// The role table: the one place that says what the roles are, which user
// each runs as, which sockets it listens on and dials, what network it may
// reach, what each listener accepts from each client, which directories of
// the home each role writes and who else reads them, which secrets it
// reads, whether it sandboxes, and the environment up gives it. The
// supervisor and up, the run/ and state directories and their permissions,
// the peer checks, the socket gates, the systemd units, the NixOS data and
// the list of directories no sandbox may mount are derived from it (spec.go
// says what each field means). A new role is a row here, its package, and
// its line in main.go.

// Table lists every role, in the order the supervisor starts the daemons:
// each one's listeners are up before a role that dials them.
var Table = []Spec{
	{Name: "egressd", User: "boxmaker-egress", Daemon: true, Network: "the hosts each call's grant allows"},
	{Name: "inferproxy", User: "boxmaker-infer", Daemon: true, Network: "the llama-server upstream",
		Upstream: true, Env: []string{environ.Upstream, environ.ModelScript}},
	// inspectd asks brokerd's quarantined inspect questions, which hold a
	// handle's content, so they never share a process, a uid or a slot
	// with loopd's requests (DESIGN.md section 15, issue 23). brokerd goes
	// on without it: an inspect call then fails, and asks again later.
	{Name: "inspectd", User: "boxmaker-inspect", Daemon: true, Network: "the llama-server upstream", Wanted: true,
		Upstream: true, Env: []string{environ.Upstream, environ.ModelScript}},
	{Name: "gatewayd", User: "boxmaker-gateway", Daemon: true, Network: "the Mattermost server",
		Needs: GatewayTable, Secrets: GatewaySecret, Env: []string{environ.Credentials}},
	// witnessd keeps brokerd's audit checkpoints where brokerd cannot
	// rewrite them (DESIGN.md section 14): it starts before brokerd and
	// stops after it, and brokerd's uid can neither write nor read witness/.
	{Name: "witnessd", User: "boxmaker-witness", Daemon: true, Network: "none", Wanted: true,
		State: []State{{Path: "witness", Mode: 0o700}}},
	{Name: "brokerd", User: "boxmaker-broker", Daemon: true, Network: "none",
		Sandboxes: true, Secrets: GrantSecrets,
		State: []State{
			{Path: "audit", Mode: 0o700},
			{Path: "broker", Mode: 0o700},
			// loopd may pass through memory/ to core.md (0710: it may
			// open what it is given, list nothing), and the notes tools
			// mount memory/ into their sandboxes; every other file there
			// keeps brokerd's own group.
			{Path: "memory", Mode: 0o710, Reader: "loopd", Sandboxed: true},
			{Path: "memory/core.md", Mode: 0o640, Reader: "loopd", File: true},
		}},
	{Name: "loopd", User: "boxmaker-loop", Daemon: true, Network: "none",
		State: []State{{Path: "sessions", Mode: 0o700}}},
	{Name: "toolkit", Network: "none"},
	{Name: "bxctl", Network: "none", Owner: true},
}

// Pair is one socket directory, run/<client>-<listener>/<socket>, shared by
// exactly two roles. What a connection may send depends on its pair, and
// the listener's gate (sock.ServerFor, sock.ListenerFor) takes it from here,
// as OpenSSH's monitor keeps a table of the requests each phase permits.
type Pair struct {
	Client   string
	Listener string
	Socket   string
	Protocol Protocol
	// Accepts lists what the client may send: message kinds for frames,
	// "METHOD /path" for HTTP. Anything else is refused at the gate.
	Accepts []string
	// NamesSessions: a chat_send through this pair may start a session
	// under a name of its own (gatewayd, one per thread). Through any
	// other pair a name resumes a session that exists.
	NamesSessions bool
}

// Protocol is how requests travel on a pair's socket. The zero value is
// none, so that a pair that forgot to say fails the table test.
type Protocol int

const (
	// Frames are wire frames (DESIGN.md section 4).
	Frames Protocol = iota + 1
	// FramesWithDescriptor are wire frames that each carry exactly one
	// descriptor beside their first byte (SCM_RIGHTS; roles/internal/fdpass).
	FramesWithDescriptor
	// HTTP is plain HTTP/1.1, as llama-server speaks it.
	HTTP
)

// Dir is the pair's directory name under run/.
func (p Pair) Dir() string { return p.Client + "-" + p.Listener }

// Path is the pair's socket under the home directory home.
func (p Pair) Path(home string) string { return filepath.Join(home, "run", p.Dir(), p.Socket) }

// Etc lists the owner's directories beside config.toml that roles read.
// Only root writes them; each is its readers' group's (one reader: its
// login group; two: the group of their pair, which holds exactly them).
var Etc = []EtcDir{
	{Path: "grants", Readers: []string{"brokerd"}},
	// brokerd, and loopd's scheduler (DESIGN.md section 13).
	{Path: "jobs", Readers: []string{"loopd", "brokerd"}},
}

// channelKinds is what a client may send on loop.sock, through either pair:
// nothing about approvals, which go from the owner to brokerd only.
var channelKinds = []string{"chat_send", "session_list", "session_log"}

// with is kinds and more, in a list of its own.
func with(kinds []string, more ...string) []string {
	return append(slices.Clone(kinds), more...)
}

// Pairs lists every socket directory and what its listener accepts.
var Pairs = []Pair{
	// The endpoints loopd uses (DESIGN.md section 8); inferproxy forwards
	// no other method or path, and no chat request on the inspect slot.
	{Client: "loopd", Listener: "inferproxy", Socket: "infer.sock", Protocol: HTTP,
		Accepts: []string{"POST /v1/chat/completions", "GET /health", "GET /props", "POST /tokenize"}},
	{Client: "loopd", Listener: "brokerd", Socket: "broker.sock", Protocol: Frames,
		Accepts: []string{"tool_request", "tool_list", "job_start", "job_done", "job_list"}},
	// Only the owner's socket accepts approvals, the notes admin kinds and
	// the owner's job_run, a trigger loopd cannot make (DESIGN.md section 13).
	{Client: "bxctl", Listener: "brokerd", Socket: "broker.sock", Protocol: Frames,
		Accepts: []string{"approval_list", "approval_answer", "session_state", "notes_list", "notes_show", "notes_endorse", "job_list", "job_show", "job_run", "handle_show",
			"mcp_pin", "mcp_list", "mcp_call"}},
	// Beside the chat, the owner starts a job's run brokerd was just told
	// of, and gatewayd takes the job replies that go to Mattermost; neither
	// may send the other's (DESIGN.md section 13).
	{Client: "bxctl", Listener: "loopd", Socket: "loop.sock", Protocol: Frames, Accepts: with(channelKinds, "job_run")},
	{Client: "gatewayd", Listener: "loopd", Socket: "loop.sock", Protocol: Frames, Accepts: with(channelKinds, "job_deliveries"),
		NamesSessions: true},
	// brokerd offers approvals to gatewayd, and tells it of each ended run
	// whose reply goes to Mattermost: gatewayd posts loopd's job_delivery
	// only for such a run (issue 23, finding 9).
	{Client: "brokerd", Listener: "gatewayd", Socket: "gateway.sock", Protocol: Frames,
		Accepts: []string{"approval_request", "job_ended"}},
	// brokerd hands each signed audit checkpoint to the witness, and the
	// witness the last of each hour to gatewayd for the owner's DM
	// (DESIGN.md section 14); neither may send anything else.
	{Client: "brokerd", Listener: "witnessd", Socket: "witness.sock", Protocol: Frames,
		Accepts: []string{"checkpoint_add", "checkpoint_submit"}},
	{Client: "witnessd", Listener: "gatewayd", Socket: "gateway.sock", Protocol: Frames,
		Accepts: []string{"checkpoint_post"}},
	// Each egress_open carries one end of the call's socketpair.
	{Client: "brokerd", Listener: "egressd", Socket: "egress.sock", Protocol: FramesWithDescriptor,
		Accepts: []string{"egress_open", "egress_mcp_open"}},
	// brokerd's quarantined questions for the inspect tool (DESIGN.md
	// section 15): frames, not HTTP, so brokerd links no net/http;
	// inspectd builds the llama-server request itself.
	{Client: "brokerd", Listener: "inspectd", Socket: "inspect.sock", Protocol: Frames,
		Accepts: []string{"inspect_request"}},
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

package wire

// What a tool's sandbox holds is part of its catalog row, as data, so that
// brokerd (which builds the sandbox), toolrun (which checks the job) and
// toolkit (which confines itself and does the work) read one row instead of
// each keeping its own list of tools. wire never builds a sandbox: these
// types name what is needed, the roles decide how.

// Sandbox is what one tool's sandbox holds beyond the minimal root every
// tool gets (the boxmaker binary, /proc, /dev, a private /tmp, the limits
// of config.toml's [sandbox]).
type Sandbox struct {
	Mount  MountKind // what of the host it sees
	System bool      // /usr and the merged-usr links, read-only, to run host programs (/bin/sh)
	Egress Egress    // its one way out, through egressd; the zero value is none
}

// MountKind says which host paths a tool's sandbox sees, and how.
type MountKind uint8

const (
	// MountNone: nothing of the host.
	MountNone MountKind = iota
	// MountCoveringEntry: the grant's paths entry that covers the call's
	// absolute path, read-only, at its own path (file_read).
	MountCoveringEntry
	// MountNote: the one note the call names, read-only, under memory/
	// (notes_read); the result is labelled from that note alone.
	MountNote
	// MountGrantNotes: every entry of the grant's paths in memory/,
	// read-only; the call names no path (notes_search).
	MountGrantNotes
	// MountWritableNoteEntry: the grant's paths entry in memory/ that
	// covers the call's path, writable, created when missing (notes_write).
	MountWritableNoteEntry
)

// Writable reports whether a sandbox of kind k can change what it mounts,
// which is why no grant for such a tool may reach memory/core.md.
func (k MountKind) Writable() bool { return k == MountWritableNoteEntry }

// Scoped reports whether the grant's paths, not the call, say what a
// sandbox of kind k sees: the call names no path, so it is inside every
// grant for the tool, and the grant chosen decides what is searched.
func (k MountKind) Scoped() bool { return k == MountGrantNotes }

// EgressTarget says whose hosts a tool's egress connection may reach.
type EgressTarget uint8

const (
	// NoEgress: the tool has no connection out.
	NoEgress EgressTarget = iota
	// GrantHosts: the hosts of the grant's [constraints] (http_fetch).
	GrantHosts
	// ConsultEndpoint: only the host of config.toml's [consult] url;
	// brokerd hands the tool that url and model in the job (consult).
	ConsultEndpoint
)

// Egress is a tool's connection to the web: brokerd hands its sandbox one
// end of a socketpair and egressd the other, with the hosts and the one
// method it may use. When the grant names a secret, egressd adds it as a
// bearer credential: that belongs to the grant, not the tool.
type Egress struct {
	To     EgressTarget
	Method string // the one HTTP method egressd lets through: GET to read, POST to send
}

// Needed reports whether the tool has an egress connection (fd 3).
func (e Egress) Needed() bool { return e.To != NoEgress }

package units

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"boxmaker/roles"
)

// Mode is a Unix mode with the setgid bit where a directory needs it,
// written in octal as chmod and tmpfiles.d take it.
type Mode uint32

const setgid Mode = 0o2000

func (m Mode) String() string { return fmt.Sprintf("%04o", uint32(m)) }

func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

func (m *Mode) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 8, 12)
	*m = Mode(v)
	return err
}

// FileMode is m as os.Chmod takes it.
func (m Mode) FileMode() fs.FileMode {
	fm := fs.FileMode(m & 0o777)
	if m&setgid != 0 {
		fm |= fs.ModeSetgid
	}
	return fm
}

// Dir is one directory (or, with File, one file created empty when absent)
// that install makes and whose owner and mode it sets on every run.
type Dir struct {
	Path  string `json:"path"`
	Owner string `json:"owner"`
	Group string `json:"group"`
	Mode  Mode   `json:"mode"`
	File  bool   `json:"file,omitempty"`
}

// Dirs lists what install makes, parents first. Each socket directory is
// owned by its listener, with the pair's group and the setgid bit, so the
// socket the listener creates there (0660) takes the group and the other
// role of the pair, alone, may connect.
func Dirs(s Site) []Dir {
	run := filepath.Join(s.Home, "run")
	out := []Dir{
		{Path: s.Home, Owner: "root", Group: "root", Mode: 0o711},
		{Path: run, Owner: "root", Group: "root", Mode: 0o711},
	}
	for _, p := range roles.Pairs {
		out = append(out, Dir{Path: filepath.Join(run, p.Dir()), Owner: userOf(p.Listener), Group: s.pairGroup(p), Mode: setgid | 0o750})
	}
	out = append(out, stateDirs(s)...)
	out = append(out, Dir{Path: s.Etc, Owner: "root", Group: "root", Mode: 0o755})
	for _, e := range roles.Etc {
		// Only root writes them; the readers' group may read them.
		out = append(out, Dir{Path: filepath.Join(s.Etc, e.Path), Owner: "root", Group: readersGroup(e.Readers), Mode: setgid | 0o750})
	}
	return append(out,
		// secrets/ is root's alone: each role reads its own copies of just
		// its secrets (secrets.go), never this directory.
		Dir{Path: s.SecretsDir(), Owner: "root", Group: "root", Mode: 0o700},
	)
}

// readersGroup is the group holding exactly readers: one role's login
// group, or the group of the pair of two ("" when they share no pair,
// which the role table's test refuses).
func readersGroup(readers []string) string {
	if len(readers) == 1 {
		return userOf(readers[0])
	}
	for _, p := range roles.Pairs {
		if len(readers) == 2 && (p.Client == readers[0] && p.Listener == readers[1] || p.Client == readers[1] && p.Listener == readers[0]) {
			return pairGroupName(p)
		}
	}
	return ""
}

// stateDirs are the State column of the role table: each entry owned by
// its role's user, its group the reader's login group where it has one.
func stateDirs(s Site) []Dir {
	var out []Dir
	for _, spec := range roles.Table {
		for _, st := range spec.State {
			group := spec.User
			if st.Reader != "" {
				group = userOf(st.Reader)
			}
			out = append(out, Dir{Path: filepath.Join(s.Home, st.Path), Owner: spec.User, Group: group, Mode: Mode(st.Mode.Perm()), File: st.File})
		}
	}
	return out
}

// writablePaths are the directories a role writes: the socket directories
// it listens in and its state directories. Its unit's ReadWritePaths= are
// these and nothing else.
func writablePaths(s Site, role string) []string {
	var out []string
	for _, p := range roles.ListensOn(role) {
		out = append(out, filepath.Join(s.Home, "run", p.Dir()))
	}
	spec, _ := roles.Lookup(role)
	for _, st := range spec.State {
		if !st.File {
			out = append(out, filepath.Join(s.Home, st.Path))
		}
	}
	return out
}

// Link is a symlink in the bin directory; argv[0] picks the role.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Binary is the name of the one binary every link points to.
const Binary = "boxmaker"

// LinkRoles are the roles with a symlink: every daemon, and the owner's
// command line (bxctl). toolkit runs only inside a sandbox, from the binary itself.
func LinkRoles() []string {
	var out []string
	for _, spec := range roles.Table {
		if spec.Daemon || spec.Owner {
			out = append(out, spec.Name)
		}
	}
	return out
}

// Links lists the symlinks, relative so that the bin directory can move.
func Links(s Site) []Link {
	var out []Link
	for _, role := range LinkRoles() {
		out = append(out, Link{Path: filepath.Join(s.Bin, role), Target: Binary})
	}
	return out
}

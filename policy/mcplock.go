package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"boxmaker/wire"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// A pin (DESIGN.md section 16) is the owner's record of what an MCP server
// offered when the owner looked: etc/mcp/NAME.lock.json, written by
// `boxmaker mcp pin` alone and read by brokerd like the grants, on every
// call. Only pinned tools are offered, with the pinned description and
// schema; a tool whose live definition differs is denied unpinned_tool.

// Lock is one lock file. Definitions are canonical JSON text (RFC 8785),
// hashed as they stand.
type Lock struct {
	Server   wire.McpServer `json:"server"`   // the config NAME
	Name     string         `json:"name"`     // the server's serverInfo.name
	Version  string         `json:"version"`  // its serverInfo.version
	Protocol string         `json:"protocol"` // the protocol version it spoke
	Tools    []LockedTool   `json:"tools"`
}

// LockedTool is one pinned tool.
type LockedTool struct {
	Name       wire.McpToolName `json:"name"`
	Definition string           `json:"definition"`
	SHA256     wire.Hash32      `json:"sha256"`
}

// LockFile is where NAME's lock lives under dir (etc/mcp/).
func LockFile(dir string, server wire.McpServer) string {
	return filepath.Join(dir, string(server)+".lock.json")
}

// NewLock pins a live list as brokerd's toolkit mcp gave it.
func NewLock(server wire.McpServer, live wire.McpToolsResult) (Lock, error) {
	l := Lock{Server: server, Name: string(live.Name), Version: string(live.Version), Protocol: string(live.Protocol), Tools: []LockedTool{}}
	for _, t := range live.Tools {
		if slices.ContainsFunc(l.Tools, func(p LockedTool) bool { return p.Name == t.Name }) {
			return Lock{}, fmt.Errorf("the server lists tool %s twice", t.Name)
		}
		l.Tools = append(l.Tools, LockedTool{Name: t.Name, Definition: string(t.Definition), SHA256: sha256.Sum256([]byte(t.Definition))})
	}
	slices.SortFunc(l.Tools, func(a, b LockedTool) int { return cmpString(string(a.Name), string(b.Name)) })
	return l, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EncodeLock is the lock file's bytes: canonical, one line, a newline.
func EncodeLock(l Lock) ([]byte, error) {
	b, err := wire.Marshal(&l)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Pins is one server's lock as brokerd uses it.
type Pins struct {
	Lock  Lock
	Tools map[wire.McpToolName]*PinnedTool
}

// PinnedTool is a pinned definition, read: what the model is shown, and the
// schema its arguments must meet.
type PinnedTool struct {
	Name        wire.McpToolName
	Hash        wire.Hash32
	Description string
	InputSchema string // canonical JSON
	// ReadOnly and Destructive are the server's annotations, its claims:
	// shown to the owner as such, never trusted.
	ReadOnly, Destructive *bool
	schema                *jsonschema.Resolved
	// Unusable says why no call of the tool can run (its schema does not
	// compile); "" when it can.
	Unusable string
}

// definition is the part of a tool's definition boxmaker reads.
type definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations *struct {
		ReadOnlyHint    *bool `json:"readOnlyHint"`
		DestructiveHint *bool `json:"destructiveHint"`
	} `json:"annotations"`
}

// ReadLock reads and checks NAME's lock in dir: the file names the server,
// every hash is its definition's, every definition is canonical JSON of a
// tool of that name. A missing lock is fs.ErrNotExist: nothing is pinned.
func ReadLock(dir string, server wire.McpServer) (*Pins, error) {
	data, err := os.ReadFile(LockFile(dir, server))
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := wire.Unmarshal(bytes.TrimSuffix(data, []byte("\n")), &l); err != nil {
		return nil, fmt.Errorf("%s: %w", LockFile(dir, server), err)
	}
	p, err := ParseLock(l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", LockFile(dir, server), err)
	}
	if l.Server != server {
		return nil, fmt.Errorf("%s: it pins server %s, not %s", LockFile(dir, server), l.Server, server)
	}
	return p, nil
}

// ParseLock checks l and reads each definition.
func ParseLock(l Lock) (*Pins, error) {
	p := &Pins{Lock: l, Tools: map[wire.McpToolName]*PinnedTool{}}
	for i, t := range l.Tools {
		if sha256.Sum256([]byte(t.Definition)) != t.SHA256 {
			return nil, fmt.Errorf("tool %s: its sha256 is not its definition's", t.Name)
		}
		if i > 0 && l.Tools[i-1].Name >= t.Name {
			return nil, errors.New("tools must be sorted by name, each once")
		}
		pt, err := readDefinition(t)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		p.Tools[t.Name] = pt
	}
	return p, nil
}

func readDefinition(t LockedTool) (*PinnedTool, error) {
	canon := jsontext.Value(t.Definition)
	if err := canon.Canonicalize(); err != nil || string(canon) != t.Definition {
		return nil, errors.New("its definition is not canonical JSON")
	}
	var d definition
	if err := json.Unmarshal([]byte(t.Definition), &d); err != nil {
		return nil, fmt.Errorf("its definition: %w", err)
	}
	if d.Name != string(t.Name) {
		return nil, fmt.Errorf("its definition names tool %q", d.Name)
	}
	pt := &PinnedTool{Name: t.Name, Hash: t.SHA256, Description: d.Description, InputSchema: string(d.InputSchema)}
	if d.Annotations != nil {
		pt.ReadOnly, pt.Destructive = d.Annotations.ReadOnlyHint, d.Annotations.DestructiveHint
	}
	pt.schema, pt.Unusable = compileSchema(d.InputSchema)
	return pt, nil
}

// compileSchema resolves an input schema in the dialect it declares
// (draft-07 or 2020-12; none is 2020-12), with no remote references. A
// schema that does not compile makes its tool unusable.
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, string) {
	if len(raw) == 0 {
		return nil, "it has no input schema"
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, "its input schema does not parse: " + err.Error()
	}
	if s.Type != "object" {
		return nil, `its input schema is not of type "object"`
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, "its input schema does not compile: " + err.Error()
	}
	return rs, ""
}

// ValidateArguments checks canonical arguments against the pinned input
// schema; arguments that fail match no grant.
func (t *PinnedTool) ValidateArguments(arguments string) error {
	if t.Unusable != "" {
		return errors.New(t.Unusable)
	}
	var v any
	if err := json.Unmarshal([]byte(arguments), &v); err != nil {
		return fmt.Errorf("arguments do not parse: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("arguments are not a JSON object")
	}
	return t.schema.Validate(v)
}

// Matches reports whether a live definition is the pinned one.
func (t *PinnedTool) Matches(live wire.McpToolDef) bool {
	return live.Name == t.Name && sha256.Sum256([]byte(live.Definition)) == t.Hash
}

// LoadLocks reads the locks of servers in dir. A missing lock means
// nothing of that server is pinned; a bad one is left out with its reason
// (fail closed), the others keep working.
func LoadLocks(dir string, servers []wire.McpServer) (map[wire.McpServer]*Pins, []error) {
	pins := map[wire.McpServer]*Pins{}
	var bad []error
	for _, s := range servers {
		p, err := ReadLock(dir, s)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			bad = append(bad, err)
		default:
			pins[s] = p
		}
	}
	return pins, bad
}

func hashOf(s string) wire.Hash32 { return sha256.Sum256([]byte(s)) }

// Claims are the tool's pinned annotations the owner is shown, as the
// server's claims: "readOnlyHint=true, destructiveHint=false", or "".
func (t *PinnedTool) Claims() string {
	var c []string
	if t.ReadOnly != nil {
		c = append(c, fmt.Sprintf("readOnlyHint=%v", *t.ReadOnly))
	}
	if t.Destructive != nil {
		c = append(c, fmt.Sprintf("destructiveHint=%v", *t.Destructive))
	}
	return strings.Join(c, ", ")
}

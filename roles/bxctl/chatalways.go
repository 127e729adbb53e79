package bxctl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"

	toml "github.com/pelletier/go-toml/v2"
)

// alwaysGrant is the grant file that would let one approved call run from
// now on without asking: the grant the approval was asked under, copied
// (its taint, result class, trust, expiry, secret and jobs stay as they
// were), with mode auto and constraints narrowed to exactly this call's
// subject. bxctl writes it as the owner, into the owner's grants; no role
// can write there, and nothing here is taken from loopd or the model's
// text as shown: the subject is read again from brokerd's canonical
// arguments, decoded by the tool's own type.
type alwaysGrant struct {
	id   string // the file stem
	path string // where it is written
	text []byte // the TOML
}

// deriveAlways builds the grant for a, or says why none can be narrow
// enough. It proves its work: the file must parse, must allow exactly
// this call at the session's taint now, and is refused otherwise.
func deriveAlways(grantsDir string, a wire.Approval) (alwaysGrant, error) {
	tool, ok := wire.ToolByName(a.Tool)
	if !ok || tool.Dimension == wire.NoDimension || tool.ScopedPaths() {
		return alwaysGrant{}, fmt.Errorf("a grant for %s cannot be narrower than every call of the tool; approve each one, or write such a grant by hand", a.Tool)
	}
	call := tool.Call(a.Arguments)
	if err := call.Err(); err != nil {
		return alwaysGrant{}, fmt.Errorf("brokerd's arguments do not decode: %w", err)
	}
	if len(policy.HandleRefs(call)) > 0 {
		return alwaysGrant{}, errors.New("the call reads handles, which are approved one call at a time")
	}
	args := call.Args()
	entry, err := narrowEntry(tool.Dimension, args.Subject())
	if err != nil {
		return alwaysGrant{}, err
	}
	fields, err := grantFields(filepath.Join(grantsDir, a.Grant+".toml"))
	if err != nil {
		return alwaysGrant{}, err
	}
	fields["mode"] = "auto"
	fields["constraints"] = map[string]any{tool.Dimension.Key(): []string{entry}}
	text, err := toml.Marshal(fields)
	if err != nil {
		return alwaysGrant{}, err
	}
	sum := sha256.Sum256([]byte(a.Tool + "\x00" + entry))
	id := "always-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(a.Tool, "-") + "-" + hex.EncodeToString(sum[:4])
	g := alwaysGrant{id: id, path: filepath.Join(grantsDir, id+".toml"), text: text}
	return g, g.proveFor(a)
}

// narrowEntry is the one constraint entry that matches subject and as
// little else as the dimension can express: the URL's own host and port,
// the cleaned path, the command itself as a quoted pattern.
func narrowEntry(dim wire.Dimension, subject string) (string, error) {
	switch dim {
	case wire.HostsDimension:
		t, err := policy.ParseURLTarget(subject)
		if err != nil {
			return "", err
		}
		host := t.Host
		if t.Addr.Is6() {
			host = "[" + host + "]"
		}
		if t.Scheme == "http" {
			return "http://" + host + ":" + strconv.Itoa(int(t.Port)), nil
		}
		if t.Port != 443 {
			host += ":" + strconv.Itoa(int(t.Port))
		}
		return host, nil
	case wire.AbsolutePathsDimension, wire.MemoryPathsDimension:
		return policy.CleanPath(dim, subject)
	case wire.PatternsDimension:
		return regexp.QuoteMeta(subject), nil
	}
	return "", errors.New("the tool has no constraint to narrow")
}

// grantFields reads the grant file the approval was asked under.
func grantFields(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the grant the approval was asked under: %w", err)
	}
	fields := map[string]any{}
	if err := toml.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("%s: %s", path, policy.TOMLError(err))
	}
	return fields, nil
}

// proveFor checks that the grant parses and that, alone, it lets a's call
// run now at the session's taint and trust.
func (g alwaysGrant) proveFor(a wire.Approval) error {
	grant, err := policy.ParseGrant(g.id+".toml", g.text)
	if err != nil {
		return fmt.Errorf("the derived grant does not parse: %w", err)
	}
	now, err := wire.TimestampOf(time.Now())
	if err != nil {
		return err
	}
	d, err := policy.Decide([]policy.Grant{grant}, policy.Request{
		Tool: a.Tool, Arguments: a.Arguments, Taint: a.SessionTaint, Untrusted: a.SessionUntrusted, Now: now,
	})
	if err != nil {
		return err
	}
	if d.Outcome() != policy.Allowed {
		return fmt.Errorf("grant %s would not let this call run without asking (%v); approve it this once", a.Grant, d.Reason())
	}
	return nil
}

// write creates the file; one already there (the same call made always
// before) is left as it is.
func (g alwaysGrant) write() error {
	f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(g.text); err != nil {
		f.Close()
		os.Remove(g.path)
		return err
	}
	return f.Close()
}

package policy

import (
	"fmt"
	"slices"
	"strings"

	"boxmaker/wire"
)

// HandleValue is one of the session's handles as brokerd hands it to
// Decide: its label and its content (DESIGN.md section 15).
type HandleValue struct {
	Class     wire.DataClass
	Untrusted bool
	Content   string
}

// HandleRefs lists the handles call refers to, sorted and once each:
// every string argument "handle:<name>", and inspect's handle. brokerd
// loads exactly these for Decide. Arguments that do not parse refer to none.
func HandleRefs(call wire.Call) []string {
	if !mayReferHandles(call) {
		return nil
	}
	return refsOf(call.Args())
}

// mayReferHandles is a quick look for a reference, which spares the common
// call a walk over its arguments: a string that decodes to "handle:..."
// holds that text or a \u escape in the call's arguments.
func mayReferHandles(call wire.Call) bool {
	args := call.Arguments()
	_, inspect := call.Args().(wire.InspectArgs)
	return inspect || strings.Contains(args, wire.HandlePrefix) || strings.Contains(args, `\u`)
}

func refsOf(args wire.ToolArgs) []string {
	if args == nil {
		return nil
	}
	var refs []string
	for _, s := range wire.ArgStrings(args) {
		if name, ok := strings.CutPrefix(s, wire.HandlePrefix); ok {
			refs = append(refs, name)
		}
	}
	if in, ok := args.(wire.InspectArgs); ok {
		refs = append(refs, in.Handle)
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// resolveHandles puts each referenced handle's content in place of its
// reference, so that constraints match what will run, and raises the taint
// and the untrusted flag the call is decided at by each handle's label. It
// returns the first name the session has no handle for, if any; arguments
// that do not parse are left for step 1 to refuse.
func (d *Decision) resolveHandles(handles map[string]HandleValue) (unknown string, ok bool) {
	if !mayReferHandles(d.call) {
		return "", true
	}
	args := d.call.Args()
	refs := refsOf(args)
	if len(refs) == 0 {
		return "", true
	}
	for _, name := range refs {
		h, ok := handles[name]
		if !ok || !wire.ValidHandleName(name) || !h.Class.Valid() {
			return name, false
		}
		d.inputClass = max(d.inputClass, h.Class)
		d.inputUntrusted = d.inputUntrusted || h.Untrusted
	}
	substituted, err := wire.MapArgStrings(args, func(s string) (string, error) {
		if name, ok := strings.CutPrefix(s, wire.HandlePrefix); ok {
			return handles[name].Content, nil
		}
		return s, nil
	})
	if err != nil {
		return "", true
	}
	input, err := d.call.WithArgs(substituted)
	if err != nil {
		return "", true
	}
	d.input, d.handles = input, refs
	d.taint, d.untrusted = max(d.taint, d.inputClass), d.untrusted || d.inputUntrusted
	d.note(1, "", fmt.Sprintf("handles %s: decided with their content, at taint %s%s",
		strings.Join(refs, ", "), d.taint, map[bool]string{true: ", untrusted", false: ""}[d.untrusted]))
	return "", true
}

// Handles lists the handles the call referred to, sorted; nil for none.
func (d Decision) Handles() []string { return slices.Clone(d.handles) }

// InputLabel is the join of the labels of the handles the call referred
// to: what its result and anything it writes take on besides the grant's
// (public and false when it referred to none).
func (d Decision) InputLabel() (wire.DataClass, bool) {
	return max(d.inputClass, wire.Public), d.inputUntrusted
}

// Untrusted reports whether the call was decided as untrusted: the
// session's flag ORed with its handles'.
func (d Decision) Untrusted() bool { return d.untrusted }

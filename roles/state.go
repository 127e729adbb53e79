package roles

// What the table's State and Owner columns give the rest: the state
// directories, those no sandbox may mount, who owns a path, and the
// owner's command line. spec.go says what the columns mean; these read
// them.

// StateDirs lists every state directory of the table (not the files), in
// the table's order.
func StateDirs() []State {
	var out []State
	for _, spec := range Table {
		for _, s := range spec.State {
			if !s.File {
				out = append(out, s)
			}
		}
	}
	return out
}

// Hidden lists the state directories no sandbox may mount: all but the
// ones marked Sandboxed. brokerd adds run/ and the configuration's own.
func Hidden() []string {
	var out []string
	for _, s := range StateDirs() {
		if !s.Sandboxed {
			out = append(out, s.Path)
		}
	}
	return out
}

// StateOwner is the role whose State lists path; "" if none does.
func StateOwner(path string) string {
	for _, spec := range Table {
		for _, s := range spec.State {
			if s.Path == path {
				return spec.Name
			}
		}
	}
	return ""
}

// IsOwner reports whether role is the owner's command line.
func IsOwner(role string) bool {
	spec, ok := Lookup(role)
	return ok && spec.Owner
}

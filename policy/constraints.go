package policy

import (
	"fmt"

	"boxmaker/wire"
)

// matcher decides whether a call's constrained argument satisfies a grant,
// and says why in a sentence.
type matcher interface {
	match(s *subject) (bool, string)
}

var dimensionKeys = []string{"paths", "hosts", "patterns"}

// compileConstraints checks c against tool's dimension and builds its
// matcher for a grant of mode: a list for a dimension the tool lacks is an
// error, and so is an empty (or absent) list for the one it has, which would
// match nothing. The mode matters to patterns only: a deny grant's patterns
// match generously (see patternsMatcher).
func compileConstraints(tool wire.Tool, mode Mode, c Constraints) (matcher, []problem) {
	lists := map[string][]string{"paths": c.Paths, "hosts": c.Hosts, "patterns": c.Patterns}
	want := tool.Dimension.Key()
	var probs []problem
	for _, key := range dimensionKeys {
		if key != want && lists[key] != nil {
			probs = append(probs, problem{"constraints." + key, fmt.Sprintf("%s takes no %s constraint", tool.Name, key)})
		}
	}
	if want == "" {
		return anyMatcher{}, probs
	}
	if len(lists[want]) == 0 {
		text := fmt.Sprintf("%s needs a %s constraint; an empty list matches nothing", tool.Name, want)
		if tool.ScopedPaths() {
			text = fmt.Sprintf("%s needs a paths constraint, the parts of memory/ it may search: add paths = [\"notes\"] "+
				"under [constraints]; every result is labelled from every file it can search, so keep secret notes in their "+
				"own directory with their own grant", tool.Name)
		}
		return nil, append(probs, problem{"constraints." + want, text})
	}
	m, errs := compileDimensionFor(tool, mode, lists[want])
	for _, err := range errs {
		probs = append(probs, problem{"constraints." + want, err.Error()})
	}
	return m, probs
}

// compileDimension builds the matcher of an allowing grant's dimension; the
// tests of paths and patterns use it.
func compileDimension(tool wire.Tool, entries []string) (matcher, []error) {
	return compileDimensionFor(tool, Auto, entries)
}

// compileDimensionFor builds the matcher of tool's dimension for a grant of
// mode from the entries of its list.
func compileDimensionFor(tool wire.Tool, mode Mode, entries []string) (matcher, []error) {
	var errs []error
	switch tool.Dimension {
	case wire.HostsDimension:
		var m hostsMatcher
		for _, s := range entries {
			e, err := parseHostEntry(s)
			errs = appendErr(errs, err)
			m = append(m, e)
		}
		return m, errs
	case wire.AbsolutePathsDimension, wire.MemoryPathsDimension:
		m := pathsMatcher{dim: tool.Dimension}
		for _, s := range entries {
			e, err := parsePathEntry(tool, s)
			errs = appendErr(errs, err)
			m.entries = append(m.entries, e)
		}
		if tool.ScopedPaths() {
			return scopeMatcher{m}, errs
		}
		return m, errs
	case wire.PatternsDimension:
		m := patternsMatcher{deny: mode == Deny}
		for i, s := range entries {
			p, err := compilePattern(i+1, s, mode)
			errs = appendErr(errs, err)
			m.patterns = append(m.patterns, p)
		}
		return m, errs
	}
	return nil, []error{fmt.Errorf("%s has a dimension policy does not know", tool.Name)}
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

package bxctl

import (
	"fmt"

	"boxmaker/policy"
)

// grantJSON is one valid grant as `grants check --json` shows it.
type grantJSON struct {
	ID            string              `json:"id"`
	Tool          string              `json:"tool"`
	Mode          string              `json:"mode"`
	MaxTaint      string              `json:"max_taint"`
	ResultClass   string              `json:"result_class"`
	Untrusted     bool                `json:"untrusted"`
	WhenUntrusted string              `json:"when_untrusted"` // "" when unset
	Expires       *string             `json:"expires"`
	Constraints   map[string][]string `json:"constraints"`
	Jobs          []string            `json:"jobs"` // null: any session that is no job's
}

type grantCheckJSON struct {
	Errors []string    `json:"errors"`
	Grants []grantJSON `json:"grants"`
}

func grantsJSON(errs []error, grants []policy.Grant) grantCheckJSON {
	out := grantCheckJSON{Errors: []string{}, Grants: []grantJSON{}}
	for _, e := range errs {
		out.Errors = append(out.Errors, e.Error())
	}
	for _, g := range grants {
		j := grantJSON{ID: g.ID(), Tool: g.Tool(), Mode: g.Mode().String(), MaxTaint: g.MaxTaint().String(),
			ResultClass: resultText(g), Untrusted: g.Untrusted(), WhenUntrusted: g.WhenUntrusted().String(),
			Constraints: map[string][]string{}, Jobs: g.Jobs()}
		if ts, ok := g.Expires(); ok {
			s := ts.String()
			j.Expires = &s
		}
		c := g.Constraints()
		for key, values := range map[string][]string{"hosts": c.Hosts, "paths": c.Paths, "patterns": c.Patterns} {
			if len(values) > 0 {
				j.Constraints[key] = values
			}
		}
		out.Grants = append(out.Grants, j)
	}
	return out
}

// explanationJSON is `grants explain --json`.
type explanationJSONOut struct {
	Decision string   `json:"decision"` // auto, ask or denied
	Reason   string   `json:"reason,omitempty"`
	Grant    *string  `json:"grant"`
	Steps    []string `json:"steps"`
}

func explanationJSON(d policy.Decision) explanationJSONOut {
	out := explanationJSONOut{Steps: []string{}}
	for _, s := range d.Explain() {
		out.Steps = append(out.Steps, fmt.Sprint(s))
	}
	if g, ok := d.Grant(); ok {
		id := g.ID()
		out.Grant = &id
	}
	switch d.Outcome() {
	case policy.Denied:
		out.Decision, out.Reason = "denied", string(d.Reason())
	case policy.Allowed:
		out.Decision = "auto"
	case policy.AwaitsApproval:
		out.Decision = "ask"
	}
	return out
}

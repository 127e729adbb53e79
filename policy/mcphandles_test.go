package policy

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// A handle reference anywhere in an MCP call's arguments is denied with a
// reason that says so, even where a grant would match its bare text; a
// string that merely mentions a handle is no reference.
func TestMCPHandleReferenceDenied(t *testing.T) {
	grants, pins := loadMCPFixtures(t)
	pin := pins["search"].Tools["fetch"]
	now, _ := wire.ParseTimestamp("2026-12-01T00:00:00.000Z")
	decide := func(args string) Decision {
		t.Helper()
		d, err := DecideMCP(grants, Request{Tool: "mcp__search__fetch", Arguments: args, Taint: wire.Public, Now: now}, pin)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := decide(`{"url":"https://docs.example.org/a","query":"handle:h1"}`)
	if d.Outcome() != Denied || d.Reason() != wire.NoGrant {
		t.Fatalf("a handle reference: %v %v", d.Outcome(), d.Reason())
	}
	var why []string
	for _, s := range d.Explain() {
		why = append(why, s.String())
	}
	if !strings.Contains(strings.Join(why, "\n"), "is a handle reference, and MCP tools take no handles") {
		t.Errorf("the explanation does not say why:\n%s", strings.Join(why, "\n"))
	}
	if d := decide(`{"url":"https://docs.example.org/a","query":"weather today"}`); d.Outcome() == Denied {
		t.Errorf("the same call without a reference is denied %v", d.Reason())
	}
}

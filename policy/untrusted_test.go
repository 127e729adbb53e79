package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

const untrustedGrantsDir = "../fixtures/policy/untrusted-grants"

type untrustedCase struct {
	policyCase
	Untrusted *bool `toml:"untrusted"`
}

func readUntrustedCases(t *testing.T) (wire.Timestamp, []untrustedCase) {
	t.Helper()
	data, err := os.ReadFile("../fixtures/policy/untrusted_cases.toml")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Now  string          `toml:"now"`
		Case []untrustedCase `toml:"case"`
	}
	if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&table); err != nil {
		t.Fatal(err)
	}
	now, err := wire.ParseTimestamp(table.Now)
	if err != nil {
		t.Fatal(err)
	}
	return now, table.Case
}

// TestUntrustedFixtures holds every row of
// fixtures/policy/untrusted_cases.toml over the grants in
// fixtures/policy/untrusted-grants: the when_untrusted rows of the decision
// table (DESIGN.md section 12). What a row allows also runs: an auto row is
// runnable at once, an ask row once approved, a held-back auto grant too.
func TestUntrustedFixtures(t *testing.T) {
	grants, bad, err := LoadDir(untrustedGrantsDir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("LoadDir(%s): %v %v", untrustedGrantsDir, err, bad)
	}
	now, cases := readUntrustedCases(t)
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.Untrusted == nil {
				t.Fatal("the row does not say untrusted = true or false")
			}
			taint, err := wire.ParseDataClass(c.Taint)
			if err != nil {
				t.Fatal(err)
			}
			req := Request{Tool: c.Tool, Arguments: c.Arguments, Taint: taint, Untrusted: *c.Untrusted, Now: now}
			d, err := Decide(grants, req)
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, c.Expect, c.Grant, c.Reason)
			checkRuns(t, d)
		})
	}
}

// checkRuns proves that an allowing decision runs: at once for auto, once
// approved for ask.
func checkRuns(t *testing.T, d Decision) {
	t.Helper()
	switch d.Outcome() {
	case Allowed:
		if _, err := d.Runnable(); err != nil {
			t.Errorf("auto decision not runnable: %v", err)
		}
	case AwaitsApproval:
		if _, err := d.Runnable(); !errors.Is(err, ErrNotApproved) {
			t.Errorf("ask decision runnable before approval: %v", err)
		}
		approved, err := Approve(d, "local:owner", nil)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := approved.Runnable(); err != nil || g.ID() != mustGrant(t, d).ID() {
			t.Errorf("approved decision: grant %q, %v", g.ID(), err)
		}
		if rec, err := approved.Record(); err != nil || rec != (wire.DecisionApproved{Grant: mustGrant(t, d).ID(), Approver: "local:owner"}) {
			t.Errorf("approved record %#v, %v", rec, err)
		}
	}
}

func mustGrant(t *testing.T, d Decision) Grant {
	t.Helper()
	g, ok := d.Grant()
	if !ok {
		t.Fatal("the decision names no grant")
	}
	return g
}

func TestWhenUntrustedParses(t *testing.T) {
	for body, want := range map[string]UntrustedRule{
		"":                            Unchanged,
		"when_untrusted = \"ask\"\n":  AskWhenUntrusted,
		"when_untrusted = \"deny\"\n": DenyWhenUntrusted,
	} {
		for _, mode := range []string{"auto", "ask"} {
			g, err := ParseGrant("g.toml", []byte(search(mode, "secret", body)))
			if err != nil {
				t.Fatalf("%s %q: %v", mode, body, err)
			}
			if g.WhenUntrusted() != want {
				t.Errorf("%s %q: WhenUntrusted = %v, want %v", mode, body, g.WhenUntrusted(), want)
			}
		}
	}
}

// A when_untrusted the policy cannot apply is an error with its file and
// line, like every other grant error.
func TestWhenUntrustedErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{search("deny", "secret", "when_untrusted = \"deny\"\n"),
			"g.toml:4: when_untrusted applies to auto and ask grants; a deny grant denies in every session"},
		{search("deny", "secret", "when_untrusted = \"ask\"\n"),
			"g.toml:4: when_untrusted applies to auto and ask grants"},
		{search("auto", "secret", "when_untrusted = \"never\"\n"),
			`g.toml:4: when_untrusted must be "ask" or "deny", not "never"`},
		{search("auto", "secret", "when_untrusted = \"Ask\"\n"),
			`g.toml:4: when_untrusted must be "ask" or "deny", not "Ask"`},
		{search("auto", "secret", "when_untrusted = \"\"\n"),
			`g.toml:4: when_untrusted must be "ask" or "deny", not ""`},
		{search("auto", "secret", "when_untrusted = true\n"),
			`g.toml:4: when_untrusted must be "ask" or "deny"`},
		{search("auto", "secret", "when-untrusted = \"ask\"\n"),
			"g.toml:4: unknown key when-untrusted"},
	}
	for _, c := range cases {
		_, err := ParseGrant("g.toml", []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.body, err, c.want)
		}
	}
}

// A notes_search grant's paths are the parts of memory/ it searches: it
// needs them, every call is inside them, and they are checked like
// notes_read's.
func TestNotesSearchPaths(t *testing.T) {
	_, err := ParseGrant("s.toml", []byte("tool = \"notes_search\"\nmode = \"auto\"\nmax_taint = \"private\"\n"))
	for _, want := range []string{"s.toml: notes_search needs a paths constraint", `add paths = ["notes"]`,
		"keep secret notes in their own directory with their own grant"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no paths: error %v, want %q", err, want)
		}
	}
	_, err = ParseGrant("s.toml", []byte("tool = \"notes_search\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npaths = []\n"))
	if err == nil || !strings.Contains(err.Error(), "s.toml:5: notes_search needs a paths constraint") {
		t.Errorf("empty paths: error %v", err)
	}
	for entry, want := range map[string]string{
		"../x":   "notes paths are relative to memory/ and stay inside it",
		"/notes": "notes paths are relative to memory/ and stay inside it",
		".":      "names the root itself",
		"notes/": `not in clean form; write "notes"`,
		"secret": "",
	} {
		body := fmt.Sprintf("tool = \"notes_search\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npaths = [%q]\n", entry)
		_, err := ParseGrant("s.toml", []byte(body))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("paths [%q]: error %v, want %q", entry, err, want)
		}
	}
	grants := grantSet(t, map[string]string{"s": search("auto", "private", "[[examples]]\narguments = '{\"query\":\"x\"}'\nmatches = true\n")})
	for _, args := range []string{`{"query":"milk"}`, `{"query":""}`, `{"query":"../../etc/passwd"}`, `{"query":"secret/bank.md"}`} {
		d, err := Decide(grants, Request{Tool: "notes_search", Arguments: args, Taint: wire.Private, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		checkDecision(t, d, "auto", "s", "")
		if s := explanation(d); !strings.Contains(s, `step 1: s: candidate: the call names no path; it sees only paths "notes"`) {
			t.Errorf("explanation:\n%s", s)
		}
	}
	if _, err := ParseGrant("s.toml", []byte(strings.Replace(search("auto", "private", ""), "[constraints]",
		"[[examples]]\narguments = '{\"query\":\"x\"}'\nmatches = false\n[constraints]", 1))); err == nil ||
		!strings.Contains(err.Error(), "example 1 does not hold") {
		t.Errorf("an example that says a search is outside the grant: %v", err)
	}
}

// No grant may mount memory/core.md writable: a notes_write entry that is
// core.md, lies under it or holds it is an error. Reading it is not.
func TestCoreMdIsNeverWritable(t *testing.T) {
	write := func(entry string) error {
		_, err := ParseGrant("w.toml", []byte(fmt.Sprintf("tool = \"notes_write\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npaths = [\"notes\", %q]\n", entry)))
		return err
	}
	for _, entry := range []string{"core.md", "Core.md", "CORE.MD", "core.md/x", ".", "", "./core.md", "notes/../core.md", "x/.."} {
		err := write(entry)
		if err == nil || !strings.Contains(err.Error(), "w.toml:5: path") || !strings.Contains(err.Error(), "memory/core.md, the system prompt of every session") {
			t.Errorf("notes_write paths [%q]: error %v", entry, err)
		}
	}
	for _, entry := range []string{"notes/core.md", "core", "core.md.d", "core.mdx"} {
		if err := write(entry); err != nil {
			t.Errorf("notes_write paths [%q]: %v", entry, err)
		}
	}
	for _, tool := range []string{"notes_read", "notes_search"} {
		body := fmt.Sprintf("tool = %q\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npaths = [\"core.md\"]\n", tool)
		if _, err := ParseGrant("r.toml", []byte(body)); err != nil {
			t.Errorf("%s may read core.md: %v", tool, err)
		}
	}
}

// UsableIn, which tool_list relies on, agrees with Decide: where no deny
// grant is in play, a session can get a notes_search call allowed or asked
// exactly when one of the grants is usable in it.
func TestUsableInAgreesWithDecide(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	classes := []string{"public", "private", "secret"}
	rules := []string{"", "when_untrusted = \"ask\"\n", "when_untrusted = \"deny\"\n"}
	for i := range 2000 {
		bodies := map[string]string{}
		for j := range 1 + r.IntN(3) {
			extra := rules[r.IntN(3)]
			if r.IntN(3) == 0 {
				extra += "expires = " + (t0 - 1 + wire.Timestamp(r.IntN(3))).String() + "\n"
			}
			bodies[fmt.Sprintf("g%d", j)] = search([]string{"auto", "ask"}[r.IntN(2)], classes[r.IntN(3)], extra)
		}
		grants := grantSet(t, bodies)
		s, err := RestoreSession([]wire.DataClass{wire.Private, wire.Secret}[r.IntN(2)], r.IntN(2) == 0)
		if err != nil {
			t.Fatal(err)
		}
		usable := false
		for _, g := range grants {
			usable = usable || g.UsableIn(s, t0)
		}
		d, err := Decide(grants, SessionRequest(s, wire.DecodeCall("notes_search", searchArgs), t0))
		if err != nil {
			t.Fatal(err)
		}
		if usable != (d.Outcome() != Denied) {
			t.Fatalf("case %d: usable %t but decided %s %s\n%v\n%s", i, usable, d.Outcome(), d.Reason(), bodies, explanation(d))
		}
	}
	deny := grantSet(t, map[string]string{"d": search("deny", "secret", "")})[0]
	if deny.UsableIn(NewSession(), t0) || (Grant{}).UsableIn(NewSession(), t0) {
		t.Error("a deny grant or the zero Grant is usable")
	}
}

func TestSessionRequestTakesTheSessionsWord(t *testing.T) {
	s, _ := RestoreSession(wire.Secret, true)
	call := wire.DecodeCall("shell", `{"command":"x"}`)
	req := SessionRequest(s, call, t0)
	if req.Call.Arguments() != call.Arguments() || req.Tool != "" || req.Arguments != "" || req.Taint != wire.Secret || !req.Untrusted || req.Now != t0 || req.Handles != nil {
		t.Errorf("request %+v", req)
	}
}

// `grants explain --untrusted` shows the rule at work.
func TestExplainNamesTheUntrustedRule(t *testing.T) {
	grants := grantSet(t, map[string]string{
		"a": search("auto", "secret", "when_untrusted = \"ask\"\n"),
		"b": search("auto", "secret", "when_untrusted = \"deny\"\n"),
	})
	d, err := Decide(grants, Request{Tool: "notes_search", Arguments: searchArgs, Taint: wire.Private, Untrusted: true, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`step 4: a: auto becomes ask: the session is untrusted and the grant says when_untrusted = "ask"`,
		`step 4: b: dropped: the session is untrusted and the grant says when_untrusted = "deny"`,
		"step 5: a: chosen: ask (an auto grant held back by when_untrusted), the lowest id (no auto candidate is left); waits for approval",
	}
	for _, w := range want {
		if s := explanation(d); !strings.Contains(s, w) {
			t.Errorf("explanation lacks %q:\n%s", w, s)
		}
	}
	d, _ = Decide(grants, Request{Tool: "notes_search", Arguments: searchArgs, Taint: wire.Private, Now: t0})
	if s := explanation(d); !strings.Contains(s, "step 4: the session is trusted, so when_untrusted changes nothing") {
		t.Errorf("trusted explanation:\n%s", s)
	}
}

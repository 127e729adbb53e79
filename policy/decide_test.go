package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

type policyCase struct {
	Name      string `toml:"name"`
	Taint     string `toml:"taint"`
	Tool      string `toml:"tool"`
	Arguments string `toml:"arguments"`
	Expect    string `toml:"expect"`
	Grant     string `toml:"grant"`
	Reason    string `toml:"reason"`
}

func readPolicyCases(t *testing.T) (wire.Timestamp, []policyCase) {
	t.Helper()
	data, err := os.ReadFile("../fixtures/policy/cases.toml")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Now  string       `toml:"now"`
		Case []policyCase `toml:"case"`
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

// TestPolicyFixtures holds every row of fixtures/policy/cases.toml over the
// grants in fixtures/grants/valid.
func TestPolicyFixtures(t *testing.T) {
	grants := loadValid(t)
	now, cases := readPolicyCases(t)
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			taint, err := wire.ParseDataClass(c.Taint)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decide(grants, Request{Tool: c.Tool, Arguments: c.Arguments, Taint: taint, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, c.Expect, c.Grant, c.Reason)
		})
	}
}

func checkDecision(t *testing.T, d Decision, expect, grant, reason string) {
	t.Helper()
	g, _ := d.Grant()
	if d.Outcome().String() != expect || g.ID() != grant || string(d.Reason()) != reason {
		t.Errorf("got %s grant %q reason %q, want %s grant %q reason %q\n%s",
			d.Outcome(), g.ID(), d.Reason(), expect, grant, reason, explanation(d))
	}
}

func explanation(d Decision) string {
	var b strings.Builder
	for _, s := range d.Explain() {
		fmt.Fprintln(&b, "\t"+s.String())
	}
	return b.String()
}

// grantSet parses grant bodies keyed by id.
func grantSet(t testing.TB, bodies map[string]string) []Grant {
	t.Helper()
	var grants []Grant
	for id, body := range bodies {
		g, err := ParseGrant(id+".toml", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		grants = append(grants, g)
	}
	return grants
}

// search is a notes_search grant over memory/notes; extra holds top-level
// keys, written before [constraints].
func search(mode, maxTaint, extra string) string {
	return fmt.Sprintf("tool = \"notes_search\"\nmode = %q\nmax_taint = %q\n%s[constraints]\npaths = [\"notes\"]\n", mode, maxTaint, extra)
}

const searchArgs = `{"query":"q"}`

var t0 = wire.Timestamp(1_800_000_000_000) // 2027-01-15T08:00:00.000Z

func TestDecideSteps(t *testing.T) {
	expiresAt := func(ts wire.Timestamp) string { return "expires = " + ts.String() + "\n" }
	cases := []struct {
		name                  string
		grants                map[string]string
		taint                 wire.DataClass
		expect, grant, reason string
	}{
		{"auto before ask, even at a higher id", map[string]string{"a": search("ask", "secret", ""), "b": search("auto", "secret", "")},
			wire.Private, "auto", "b", ""},
		{"lowest id among autos", map[string]string{"c": search("auto", "secret", ""), "b": search("auto", "secret", ""), "a": search("ask", "secret", "")},
			wire.Private, "auto", "b", ""},
		{"lowest id among asks", map[string]string{"z": search("ask", "secret", ""), "y": search("ask", "secret", "")},
			wire.Private, "ask", "y", ""},
		{"deny wins over a lower auto", map[string]string{"a": search("auto", "secret", ""), "z": search("deny", "public", "")},
			wire.Secret, "denied", "z", "denied_by_grant"},
		{"lowest deny", map[string]string{"y": search("deny", "secret", ""), "x": search("deny", "secret", "")},
			wire.Private, "denied", "x", "denied_by_grant"},
		{"expired deny is dropped", map[string]string{"a": search("deny", "secret", expiresAt(t0-1)), "b": search("auto", "secret", "")},
			wire.Private, "auto", "b", ""},
		{"expiry at now has expired", map[string]string{"a": search("auto", "secret", expiresAt(t0))},
			wire.Private, "denied", "a", "grant_expired"},
		{"expiry a millisecond later is live", map[string]string{"a": search("auto", "secret", expiresAt(t0+1))},
			wire.Private, "auto", "a", ""},
		{"expired auto leaves the ask", map[string]string{"a": search("auto", "secret", expiresAt(t0)), "b": search("ask", "secret", "")},
			wire.Private, "ask", "b", ""},
		{"lowest expired id", map[string]string{"b": search("auto", "secret", expiresAt(t0-5)), "a": search("ask", "secret", expiresAt(t0-9))},
			wire.Private, "denied", "a", "grant_expired"},
		{"expiry is checked before taint", map[string]string{"a": search("auto", "private", expiresAt(t0))},
			wire.Secret, "denied", "a", "grant_expired"},
		{"taint names the auto grant step 5 would choose", map[string]string{"a": search("ask", "private", ""), "b": search("auto", "private", "")},
			wire.Secret, "denied", "b", "taint_too_high"},
		{"taint names the lowest ask when there is no auto", map[string]string{"b": search("ask", "private", ""), "a": search("ask", "private", "")},
			wire.Secret, "denied", "a", "taint_too_high"},
		{"taint equal to max_taint applies", map[string]string{"a": search("auto", "private", "")},
			wire.Private, "auto", "a", ""},
		{"taint drops the auto, the ask remains", map[string]string{"a": search("auto", "private", ""), "b": search("ask", "secret", "")},
			wire.Secret, "ask", "b", ""},
		{"deny applies under any taint", map[string]string{"a": search("deny", "public", "")},
			wire.Secret, "denied", "a", "denied_by_grant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			grants := grantSet(t, c.grants)
			for range 5 { // the order grants come in never matters
				rand.Shuffle(len(grants), func(i, j int) { grants[i], grants[j] = grants[j], grants[i] })
				d, err := Decide(grants, Request{Tool: "notes_search", Arguments: searchArgs, Taint: c.taint, Now: t0})
				if err != nil {
					t.Fatal(err)
				}
				checkDecision(t, d, c.expect, c.grant, c.reason)
			}
		})
	}
}

func TestDecideNoGrant(t *testing.T) {
	grants := loadValid(t)
	big := strings.Repeat("a", 1<<20)
	cases := []struct{ name, tool, arguments string }{
		{"unknown tool", "rm", `{"path":"/"}`},
		{"tool name case", "Shell", `{"command":"git status"}`},
		{"no grant for the tool", "notes_search", searchArgs},
		{"null arguments", "shell", `null`},
		{"empty arguments", "shell", ``},
		{"trailing data", "shell", `{"command":"git status"} {"command":"rm -rf /"}`},
		{"missing member", "notes_write", `{"path":"notes/x.md"}`},
		{"arguments of another tool", "shell", `{"url":"https://docs.python.org/"}`},
		{"1 MiB host", "http_fetch", `{"url":"https://` + big + `.example/"}`},
		{"1 MiB command", "shell", `{"command":"git status ` + big + `; rm -rf /"}`},
		{"1 MiB path", "notes_read", `{"path":"../` + big + `"}`},
		{"1 MiB arguments that do not parse", "shell", `{"command":"` + big},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(grants, Request{Tool: c.tool, Arguments: c.arguments, Taint: wire.Private, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, "denied", "", "no_grant")
			for _, s := range d.Explain() {
				if len(s.String()) > 1000 {
					t.Errorf("an explanation line is %d bytes long", len(s.String()))
				}
			}
		})
	}
}

func TestDecideHugeArgumentsThatMatch(t *testing.T) {
	grants := loadValid(t)
	big := strings.Repeat("x/", 1<<19)
	d, err := Decide(grants, Request{Tool: "notes_read", Arguments: `{"path":"notes/` + big + `"}`, Taint: wire.Private, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	checkDecision(t, d, "auto", "notes", "")
	if d.Input().Arguments() != `{"path":"notes/`+big+`"}` {
		t.Error("the decision does not carry the arguments whole")
	}
	d, err = Decide(grants, Request{Tool: "http_fetch", Arguments: `{"url":"https://docs.python.org/` + big + `"}`, Taint: wire.Private, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	checkDecision(t, d, "auto", "fetch-docs", "")
	d, err = Decide(grants, Request{Tool: "shell", Arguments: `{"command":"git status ` + strings.Repeat("a", 1<<20) + `"}`, Taint: wire.Private, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	checkDecision(t, d, "auto", "shell-git", "")
}

func TestDecideRefusesAnInvalidTaint(t *testing.T) {
	if _, err := Decide(loadValid(t), Request{Tool: "consult", Arguments: `{"prompt":"x"}`, Now: t0}); err == nil {
		t.Error("Decide accepted the zero taint")
	}
}

func TestDecideIgnoresZeroGrants(t *testing.T) {
	grants := append([]Grant{{}}, grantSet(t, map[string]string{"a": search("ask", "secret", "")})...)
	d, err := Decide(grants, Request{Tool: "notes_search", Arguments: searchArgs, Taint: wire.Private, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	checkDecision(t, d, "ask", "a", "")
}

// TestExplainNamesEachStep is what `boxmaker grants explain` prints.
func TestExplainNamesEachStep(t *testing.T) {
	grants := loadValid(t)
	d, err := Decide(grants, Request{Tool: "http_fetch", Arguments: `{"url":"https://docs.python.org/3/"}`, Taint: wire.Secret, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`step 1: fetch-ask: candidate: https://docs.python.org:443 is covered by hosts entry "*"`,
		`step 1: fetch-docs: candidate: https://docs.python.org:443 is covered by hosts entry "docs.python.org"`,
		"step 2: no unexpired deny grant matches",
		"step 4: fetch-ask: dropped: max_taint private is below the session taint secret",
		"step 4: fetch-docs: dropped: max_taint private is below the session taint secret",
		"step 4: fetch-docs: denied taint_too_high: the session taint is above every candidate's max_taint; step 5 would have chosen this grant",
	}
	if got := strings.TrimSpace(strings.ReplaceAll(explanation(d), "\t", "")); got != strings.Join(want, "\n") {
		t.Errorf("explanation:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	d, _ = Decide(grants, Request{Tool: "file_read", Arguments: `{"path":"/etc/hostname"}`, Taint: wire.Private, Now: t0})
	if s := explanation(d); !strings.Contains(s, "step 3: old-hostname: dropped: expired at 2026-01-01T00:00:00.000Z") {
		t.Errorf("explanation lacks the expiry:\n%s", s)
	}
	d, _ = Decide(grants, Request{Tool: "shell", Arguments: `{"command":"ls"}`, Taint: wire.Private, Now: t0})
	if s := explanation(d); !strings.Contains(s, "step 1: shell-git: not a candidate: no pattern matches the whole command") {
		t.Errorf("explanation lacks the pattern miss:\n%s", s)
	}
}

// Grants need not come in id order: the fixture cases decide the same, with
// the same explanation, over the grants reversed as over them in order.
func TestDecideTakesGrantsInAnyOrder(t *testing.T) {
	grants := loadValid(t)
	reversed := slices.Clone(grants)
	slices.Reverse(reversed)
	now, cases := readPolicyCases(t)
	for _, c := range cases {
		taint, err := wire.ParseDataClass(c.Taint)
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Tool: c.Tool, Arguments: c.Arguments, Taint: taint, Now: now}
		inOrder, err1 := Decide(grants, req)
		anyOrder, err2 := Decide(reversed, req)
		g1, _ := inOrder.Grant()
		g2, _ := anyOrder.Grant()
		same := inOrder.Outcome() == anyOrder.Outcome() && g1.ID() == g2.ID() && inOrder.Reason() == anyOrder.Reason()
		if err1 != nil || err2 != nil || !same || explanation(inOrder) != explanation(anyOrder) {
			t.Errorf("%s: in id order\n%s(%v)\nreversed\n%s(%v)", c.Name, explanation(inOrder), err1, explanation(anyOrder), err2)
		}
	}
}

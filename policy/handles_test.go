package policy

import (
	"os"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

type handleTable struct {
	Now     string `toml:"now"`
	Handles map[string]struct {
		Class     string `toml:"class"`
		Untrusted bool   `toml:"untrusted"`
		Content   string `toml:"content"`
	} `toml:"handles"`
	Case []struct {
		policyCase
		Untrusted bool `toml:"untrusted"`
	} `toml:"case"`
}

func readHandleTable(t *testing.T) (wire.Timestamp, map[string]HandleValue, handleTable) {
	t.Helper()
	data, err := os.ReadFile("../fixtures/policy/handle_cases.toml")
	if err != nil {
		t.Fatal(err)
	}
	var table handleTable
	if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&table); err != nil {
		t.Fatal(err)
	}
	now, err := wire.ParseTimestamp(table.Now)
	if err != nil {
		t.Fatal(err)
	}
	handles := map[string]HandleValue{}
	for name, h := range table.Handles {
		class, err := wire.ParseDataClass(h.Class)
		if err != nil {
			t.Fatal(err)
		}
		handles[name] = HandleValue{Class: class, Untrusted: h.Untrusted, Content: h.Content}
	}
	return now, handles, table
}

func loadHandleGrants(t *testing.T) []Grant {
	t.Helper()
	grants, bad, err := LoadDir("../fixtures/policy/handle-grants")
	if err != nil || len(bad) > 0 || len(grants) == 0 {
		t.Fatalf("handle-grants: %v %v", err, bad)
	}
	return grants
}

// TestHandleFixtures holds every row of fixtures/policy/handle_cases.toml.
func TestHandleFixtures(t *testing.T) {
	grants := loadHandleGrants(t)
	now, handles, table := readHandleTable(t)
	if len(table.Case) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range table.Case {
		t.Run(c.Name, func(t *testing.T) {
			taint := wire.Private
			if c.Taint != "" {
				var err error
				if taint, err = wire.ParseDataClass(c.Taint); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Decide(grants, Request{Tool: c.Tool, Arguments: c.Arguments, Taint: taint, Untrusted: c.Untrusted, Now: now, Handles: handles})
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, c.Expect, c.Grant, c.Reason)
		})
	}
}

// What runs is the content; what the decision says it referred to is the
// names; the labels it carries are the handles'.
func TestHandleSubstitution(t *testing.T) {
	grants := loadHandleGrants(t)
	now, handles, _ := readHandleTable(t)
	d, err := Decide(grants, Request{Tool: "notes_write", Arguments: `{"path":"notes/a.md","content":"handle:h1"}`,
		Taint: wire.Private, Now: now, Handles: handles})
	if err != nil || d.Outcome() != Allowed {
		t.Fatalf("%v %v\n%s", d.Outcome(), err, explanation(d))
	}
	if got, want := d.Input().Arguments(), `{"path":"notes/a.md","content":"https://example.org/?pin=4711"}`; got != want {
		t.Errorf("arguments %s, want %s", got, want)
	}
	if a := d.Input().Args().(wire.NotesWriteArgs); a.Content != handles["h1"].Content {
		t.Errorf("args %+v", a)
	}
	if h := d.Handles(); len(h) != 1 || h[0] != "h1" {
		t.Errorf("handles %v", h)
	}
	if c, u := d.InputLabel(); c != wire.Secret || u {
		t.Errorf("input label %v %v", c, u)
	}
	if d.Taint() != wire.Secret {
		t.Errorf("decided at %v, want secret", d.Taint())
	}
	if _, err := d.Runnable(); err != nil {
		t.Error(err)
	}
	// Without references nothing changes, and the label is public.
	plain, _ := Decide(grants, Request{Tool: "notes_write", Arguments: `{"path":"notes/a.md","content":"x"}`, Taint: wire.Private, Now: now})
	if c, u := plain.InputLabel(); c != wire.Public || u || plain.Handles() != nil || plain.Input().Arguments() != `{"path":"notes/a.md","content":"x"}` {
		t.Errorf("a call without handles: %v %v %v %s", c, u, plain.Handles(), plain.Input().Arguments())
	}
}

// Handles belong to a session: brokerd passes only the session's own, so a
// name another session has is unknown here.
func TestAnotherSessionsHandleIsUnknown(t *testing.T) {
	grants := loadHandleGrants(t)
	now, _, _ := readHandleTable(t)
	mine := map[string]HandleValue{"h1": {Class: wire.Public, Content: "https://example.org/"}}
	d, _ := Decide(grants, Request{Tool: "http_fetch", Arguments: `{"url":"handle:h2"}`, Taint: wire.Private, Now: now, Handles: mine})
	checkDecision(t, d, "denied", "", "unknown_handle")
	if d.Input().Arguments() != `{"url":"handle:h2"}` {
		t.Errorf("a denied reference kept %s", d.Input().Arguments())
	}
}

func TestHandleRefs(t *testing.T) {
	for _, c := range []struct{ tool, args, want string }{
		{"http_fetch", `{"url":"https://a/"}`, ""},
		{"notes_write", `{"path":"handle:h2","content":"handle:h1"}`, "h1 h2"},
		{"notes_write", `{"path":"handle:h1","content":"handle:h1"}`, "h1"},
		{"inspect", `{"handle":"h4","question":"handle:h3","answer":{"type":"bool"}}`, "h3 h4"},
		{"http_fetch", `{"url":"\u0068andle:h5"}`, "h5"},
		{"http_fetch", `not json handle:h1`, ""},
	} {
		if got := strings.Join(HandleRefs(wire.DecodeCall(c.tool, c.args)), " "); got != c.want {
			t.Errorf("HandleRefs(%s, %s) = %q, want %q", c.tool, c.args, got, c.want)
		}
	}
}

func TestHandleGrantKeys(t *testing.T) {
	ok := map[string]string{
		"handle":     "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult = \"handle\"\n[constraints]\npaths = [\"s\"]\n",
		"content":    "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult = \"content\"\n[constraints]\npaths = [\"s\"]\n",
		"declassify": "tool = \"inspect\"\nmode = \"ask\"\nmax_taint = \"secret\"\ndeclassify = true\n",
	}
	for id, body := range ok {
		g, err := ParseGrant(id+".toml", []byte(body))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if g.ResultIsHandle() != (id == "handle") || g.Declassify() != (id == "declassify") {
			t.Errorf("%s: handle %t declassify %t", id, g.ResultIsHandle(), g.Declassify())
		}
	}
	bad := map[string]struct{ body, want string }{
		"other value":           {"tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult = \"Handle\"\n[constraints]\npatterns = [\"x\"]\n", `bad.toml:4: result must be "content" (the default) or "handle", not "Handle"`},
		"not a string":          {"tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult = true\n[constraints]\npatterns = [\"x\"]\n", `result must be "content" or "handle"`},
		"deny grant":            {"tool = \"shell\"\nmode = \"deny\"\nmax_taint = \"secret\"\nresult = \"handle\"\n[constraints]\npatterns = [\"x\"]\n", "a deny grant has none"},
		"inspect handle":        {"tool = \"inspect\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult = \"handle\"\n", "does not apply to inspect"},
		"declassify on fetch":   {"tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\ndeclassify = true\n[constraints]\nhosts = [\"a.example\"]\n", "bad.toml:4: declassify applies only to inspect grants"},
		"constraint on inspect": {"tool = \"inspect\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"x\"]\n", "paths"},
	}
	for name, c := range bad {
		_, err := ParseGrant("bad.toml", []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}

package policy

import (
	"slices"
	"strings"
	"testing"

	"boxmaker/wire"
)

const jobGrantsDir = "../fixtures/jobs/valid/grants"

// A grant with jobs applies only in sessions of those jobs; one without,
// everywhere.
func TestGrantsForJob(t *testing.T) {
	grants, bad, err := LoadDir(jobGrantsDir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("LoadDir(%s): %v %v", jobGrantsDir, err, bad)
	}
	ids := func(gs []Grant) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.ID())
		}
		return out
	}
	for _, c := range []struct {
		job  string
		want []string
	}{
		{"", []string{"notes-read"}},
		{"morning-news", []string{"fetch-weather", "notes-read"}},
		{"tidy-notes", []string{"notes-read", "notes-write-jobs"}},
		{"weekly-review", []string{"notes-read", "notes-write-jobs"}},
		{"other", []string{"notes-read"}},
	} {
		if got := ids(GrantsForJob(grants, c.job)); !slices.Equal(got, c.want) {
			t.Errorf("job %q: grants %v, want %v", c.job, got, c.want)
		}
	}
	byID := map[string]Grant{}
	for _, g := range grants {
		byID[g.ID()] = g
	}
	if got := byID["notes-write-jobs"].Jobs(); !slices.Equal(got, []string{"tidy-notes", "weekly-review"}) {
		t.Errorf("Jobs() = %v", got)
	}
	if got := byID["notes-read"].Jobs(); got != nil {
		t.Errorf("a grant without jobs: Jobs() = %v, want nil", got)
	}
	byID["fetch-weather"].Jobs()[0] = "changed"
	if byID["fetch-weather"].Jobs()[0] != "morning-news" {
		t.Error("Jobs() hands out the grant's own slice")
	}
}

func TestGrantJobsKeyErrors(t *testing.T) {
	const base = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"notes\"]\n"
	for _, c := range []struct{ jobs, want string }{
		{`jobs = []`, "g.toml:1: jobs = [] would apply in no session"},
		{`jobs = ["Morning"]`, `g.toml:1: jobs: job id "Morning" must be 1 to 45 of [a-z0-9-]`},
		{`jobs = ["a", "b", "a"]`, `g.toml:1: jobs names "a" twice`},
		{`jobs = "morning-news"`, "g.toml:1: jobs must be an array of job ids"},
	} {
		_, err := ParseGrant("g.toml", []byte(c.jobs+"\n"+base))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.jobs, err, c.want)
		}
	}
}

// Decide over the grants of a job's session lets the job's grant run the
// call; over a chat session's grants, nothing matches.
func TestJobGrantDecidesOnlyInItsJob(t *testing.T) {
	grants, _, _ := LoadDir(jobGrantsDir)
	req := Request{Tool: "http_fetch", Arguments: `{"url":"https://api.open-meteo.com/v1/forecast"}`, Taint: wire.Private, Now: 1}
	for _, c := range []struct {
		job, want string
	}{
		{"morning-news", "allowed fetch-weather"},
		{"", "denied no_grant"},
		{"tidy-notes", "denied no_grant"},
	} {
		d, err := Decide(GrantsForJob(grants, c.job), req)
		if err != nil {
			t.Fatal(err)
		}
		got := "denied " + string(d.Reason())
		if g, ok := d.Grant(); ok && d.Outcome() == Allowed {
			got = "allowed " + g.ID()
		}
		if got != c.want {
			t.Errorf("job %q: %s, want %s", c.job, got, c.want)
		}
	}
}

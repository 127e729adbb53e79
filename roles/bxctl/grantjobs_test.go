package bxctl

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `grants check` checks the jobs/ beside the grants: the valid fixtures
// pass and are listed, with each grant's jobs.
func TestGrantsCheckListsJobs(t *testing.T) {
	code, out, errOut := run(t, "grants", "check", fixtures+"/jobs/valid/grants")
	if code != 0 {
		t.Fatalf("status %d\n%s%s", code, out, errOut)
	}
	for _, row := range []string{
		`fetch-weather +http_fetch +auto .* +morning-news$`,
		`notes-read +notes_read .* +-$`,
		`notes-write-jobs +notes_write .* +tidy-notes,weekly-review$`,
		`JOB +SCHEDULE +ZONE +DELIVER +MAX_TURN +CATCH_UP$`,
		`morning-news +0 7 \* \* mon-fri +Europe/Berlin +mattermost +10m0s +true$`,
		`tidy-notes +every 6h +- +log +- +false$`,
		`weekly-review +30 18 \* \* fri +local +mattermost:b{26} +- +false$`,
	} {
		if !regexp.MustCompile(`(?m)^` + row).MatchString(out) {
			t.Errorf("no row like %q:\n%s", row, out)
		}
	}
}

// A grant naming a job that does not exist fails the check.
func TestGrantsCheckReportsAMissingJob(t *testing.T) {
	code, out, errOut := run(t, "grants", "check", fixtures+"/jobs/missing-job/grants")
	want := `fetch-weather.toml: jobs names "morning-nwes", which is not a valid job in ` + filepath.Join(fixtures, "jobs/missing-job/jobs")
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(errOut, "jobs named by grants but not valid: 1") {
		t.Errorf("status %d\n%s%s\nwant status 1 and %q", code, out, errOut, want)
	}
}

// Bad job files are reported with file, line and reason, and a grant
// naming a job whose file is bad names a job that does not exist.
func TestGrantsCheckReportsBadJobFiles(t *testing.T) {
	etc := t.TempDir()
	copyFixtures(t, fixtures+"/jobs/valid/grants", filepath.Join(etc, "grants"), nil)
	copyFixtures(t, fixtures+"/jobs/invalid", filepath.Join(etc, "jobs"), map[string]string{
		"bad_hour.toml": "morning-news.toml", "unknown_key.toml": "tidy-notes.toml",
	})
	copyFixtures(t, fixtures+"/jobs/valid/jobs", filepath.Join(etc, "jobs"), map[string]string{"weekly-review.toml": "weekly-review.toml"})
	code, out, errOut := run(t, "grants", "check", filepath.Join(etc, "grants"))
	jobs := filepath.Join(etc, "jobs")
	for _, want := range []string{
		filepath.Join(jobs, "morning-news.toml") + `:2: schedule "0 25 * * *": hour: "25" is not a number from 0 to 23`,
		filepath.Join(jobs, "tidy-notes.toml") + ":4: unknown key retries",
		`fetch-weather.toml: jobs names "morning-news", which is not a valid job in ` + jobs,
		`notes-write-jobs.toml: jobs names "tidy-notes", which is not a valid job`,
		"\nweekly-review ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(errOut, "grants check: 2 of 3 job files are invalid; jobs named by grants but not valid: 2") {
		t.Errorf("status %d, stderr %q", code, errOut)
	}
}

// A job delivering to Mattermost needs [gateway] in the config.toml beside
// the grants, and a channel it lists.
func TestGrantsCheckComparesDeliveriesWithTheGateway(t *testing.T) {
	etc := t.TempDir()
	copyFixtures(t, fixtures+"/jobs/valid/grants", filepath.Join(etc, "grants"), nil)
	copyFixtures(t, fixtures+"/jobs/valid/jobs", filepath.Join(etc, "jobs"), nil)
	gateway := "[gateway]\nurl = \"https://mm.example\"\nallow_users = [\"" + strings.Repeat("a", 26) + "\"]\n"
	for _, c := range []struct {
		config string
		code   int
		want   []string
	}{
		{gateway + "channels = [\"" + strings.Repeat("b", 26) + "\"]\n", 0, nil},
		{gateway, 1, []string{`job weekly-review: deliver = "mattermost:bbbbbbbbbbbbbbbbbbbbbbbbbb", but [gateway] channels in`}},
		{"[loop]\nmax_steps = 5\n", 1, []string{`job morning-news: deliver = "mattermost", but`, "has no [gateway]", "job weekly-review"}},
	} {
		if err := os.WriteFile(filepath.Join(etc, "config.toml"), []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, "grants", "check", filepath.Join(etc, "grants"))
		if code != c.code {
			t.Errorf("config %q: status %d, want %d\n%s%s", c.config, code, c.code, out, errOut)
		}
		for _, want := range c.want {
			if !strings.Contains(out, want) || strings.Contains(out, "job tidy-notes") {
				t.Errorf("config %q: output lacks %q (or blames the log job):\n%s", c.config, want, out)
			}
		}
	}
}

// copyFixtures copies the files of from into to, all of them when names
// is nil, else those it names, under the names it gives.
func copyFixtures(t *testing.T, from, to string, names map[string]string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	if names == nil {
		entries, err := os.ReadDir(from)
		if err != nil {
			t.Fatal(err)
		}
		names = map[string]string{}
		for _, e := range entries {
			names[e.Name()] = e.Name()
		}
	}
	for src, dst := range names {
		data, err := os.ReadFile(filepath.Join(from, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, dst), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// `grants explain` decides in a session that is no job's unless --job
// names one: a job's grant does not apply outside its runs.
func TestGrantsExplainJob(t *testing.T) {
	for _, c := range []struct {
		job, want string
	}{
		{"", "decision: denied no_grant"},
		{"tidy-notes", "decision: denied no_grant"},
		{"morning-news", "decision: auto: runs now under grant fetch-weather"},
	} {
		code, out, errOut := run(t, "grants", "explain", "--grants", fixtures+"/jobs/valid/grants", "--job", c.job,
			"http_fetch", `{"url":"https://api.open-meteo.com/v1/forecast"}`)
		if code != explainStatus(c.want) || !strings.Contains(out, c.want) {
			t.Errorf("--job %q: status %d, want %d\n%s%s\nwant %q", c.job, code, explainStatus(c.want), out, errOut, c.want)
		}
	}
}

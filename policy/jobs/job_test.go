package jobs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/policy"
)

const (
	validJobsDir   = "../../fixtures/jobs/valid/jobs"
	invalidJobsDir = "../../fixtures/jobs/invalid"
)

func loadValidJobs(t *testing.T) map[string]Job {
	t.Helper()
	jobs, bad, err := LoadJobs(validJobsDir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("LoadJobs(%s): %v %v", validJobsDir, err, bad)
	}
	byID := map[string]Job{}
	var ids []string
	for _, j := range jobs {
		byID[j.ID()] = j
		ids = append(ids, j.ID())
	}
	if want := []string{"morning-news", "tidy-notes", "weekly-review"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	return byID
}

func TestValidJobFixturesParse(t *testing.T) {
	jobs := loadValidJobs(t)
	check := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	mn := jobs["morning-news"]
	cron, isCron := mn.Cron()
	check("morning-news schedule", mn.Schedule()+fmt.Sprint(isCron, cron.FixedTime()), "0 7 * * mon-fritrue true")
	check("morning-news zone", mn.Zone().String(), "Europe/Berlin")
	check("morning-news prompt", mn.Prompt(), "Summarise my inbox notes from yesterday in five lines,\nthen fetch today's weather for Berlin.\n")
	check("morning-news deliver", mn.Deliver().Kind(), DeliverOwner)
	maxTurn, ok := mn.MaxTurn()
	check("morning-news max_turn", fmt.Sprint(maxTurn, ok), "10m0s true")
	check("morning-news catch_up", mn.CatchUp(), true)

	wr := jobs["weekly-review"]
	check("weekly-review zone defaults to the host's", wr.Zone(), time.Local)
	check("weekly-review deliver", wr.Deliver().String(), "mattermost:bbbbbbbbbbbbbbbbbbbbbbbbbb")
	check("weekly-review channel", wr.Deliver().Channel(), "bbbbbbbbbbbbbbbbbbbbbbbbbb")
	check("weekly-review catch_up defaults to false", wr.CatchUp(), false)
	if _, ok := wr.MaxTurn(); ok {
		t.Error("weekly-review has no max_turn")
	}

	tn := jobs["tidy-notes"]
	every, ok := tn.Every()
	check("tidy-notes every", fmt.Sprintf("%v %v %s", every, ok, tn.Schedule()), "6h0m0s true every 6h")
	check("tidy-notes zone", tn.Zone() == nil, true)
	check("tidy-notes deliver", tn.Deliver().Kind(), DeliverLog)
}

type invalidJobCase struct {
	File  string `toml:"file"`
	Line  int    `toml:"line"`
	Error string `toml:"error"`
}

func readInvalidJobCases(t *testing.T) []invalidJobCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(invalidJobsDir, "cases.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Case []invalidJobCase `toml:"case"`
	}
	if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&table); err != nil {
		t.Fatal(err)
	}
	return table.Case
}

// Every bad job file is refused naming its file, the line and the reason.
// The files are named with underscores, which no job id has, so each is
// also parsed under a valid id: the reason must come from the content.
func TestInvalidJobFixturesFailWithTheirGist(t *testing.T) {
	cases := readInvalidJobCases(t)
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			path := filepath.Join(invalidJobsDir, c.File)
			want := fmt.Sprintf("%s: ", path)
			if c.Line > 0 {
				want = fmt.Sprintf("%s:%d: ", path, c.Line)
			}
			_, err := LoadJobFile(path)
			var je *JobError
			if !errors.As(err, &je) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.Error) {
				t.Errorf("LoadJobFile: error %q, want %q with %q", err, want, c.Error)
			}
			data, _ := os.ReadFile(path)
			stem := strings.ReplaceAll(strings.TrimSuffix(c.File, ".toml"), "_", "-")
			_, err = ParseJob(stem+".toml", data)
			if err == nil || !strings.Contains(err.Error(), c.Error) || strings.Contains(err.Error(), "job id") {
				t.Errorf("ParseJob under a valid id: error %q, want %q alone", err, c.Error)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(invalidJobsDir, "*.toml"))
	for _, f := range files {
		name := filepath.Base(f)
		if name != "cases.toml" && !slices.ContainsFunc(cases, func(c invalidJobCase) bool { return c.File == name }) {
			t.Errorf("%s has no case in cases.toml", name)
		}
	}
}

func TestLoadJobsSeparatesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"good.toml":  "every = \"1h\"\nprompt = \"x\"\ndeliver = \"log\"\n",
		"Bad.toml":   "every = \"1h\"\nprompt = \"x\"\ndeliver = \"log\"\n",
		"worse.toml": "every = \"1h\"\n",
		"notes.txt":  "not a job",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jobs, bad, err := LoadJobs(dir)
	if err != nil || len(jobs) != 1 || jobs[0].ID() != "good" || len(bad) != 2 {
		t.Fatalf("LoadJobs: %v, %d bad: %v", err, len(bad), bad)
	}
	if !strings.Contains(bad[0].Error(), `job id "Bad" must be 1 to 45 of [a-z0-9-]`) || !strings.Contains(bad[1].Error(), "prompt is required") {
		t.Errorf("bad files: %v", bad)
	}
	jobs, bad, err = LoadJobs(filepath.Join(dir, "jobs"))
	if err != nil || jobs != nil || bad != nil {
		t.Errorf("a missing jobs/ holds no jobs, got %v %v %v", jobs, bad, err)
	}
}

func TestJobIDFitsASessionID(t *testing.T) {
	data := []byte("every = \"1h\"\nprompt = \"x\"\ndeliver = \"log\"\n")
	long := strings.Repeat("a", policy.MaxJobID)
	if _, err := ParseJob(long+".toml", data); err != nil {
		t.Errorf("a %d-character id: %v", policy.MaxJobID, err)
	}
	if _, err := ParseJob(long+"a.toml", data); err == nil || !strings.Contains(err.Error(), "session ids fit in 64") {
		t.Errorf("a %d-character id: %v", policy.MaxJobID+1, err)
	}
	if session := "job-" + long + "-20261201070000"; len(session) != 64 {
		t.Errorf("the longest session id is %d characters", len(session))
	}
}

func TestParseDelivery(t *testing.T) {
	for _, s := range []string{"log", "mattermost", "mattermost:0123456789abcdefghijklmnop"} {
		d, err := ParseDelivery(s)
		if err != nil || d.String() != s {
			t.Errorf("%q: %v, %q", s, err, d)
		}
	}
	for _, s := range []string{"", "Log", "mattermost:", "mattermost:ABCDEFGHIJKLMNOPQRSTUVWXYZ", "mattermost:0123456789abcdefghijklmnopq", "slack"} {
		if d, err := ParseDelivery(s); err == nil {
			t.Errorf("%q: accepted as %v", s, d)
		}
	}
	if (Delivery{}).Kind() != 0 {
		t.Error("the zero Delivery has a kind")
	}
}

// Nothing is due before the job was first seen; every counts from then.
func TestJobNext(t *testing.T) {
	jobs := loadValidJobs(t)
	at := func(s string) time.Time { return mustTime(t, s) }
	seen := at("2026-12-01T10:00:00Z")
	for _, c := range []struct {
		job              string
		firstSeen, after time.Time
		want             string
	}{
		{"tidy-notes", seen, seen, "2026-12-01T16:00:00Z"},
		{"tidy-notes", seen, at("2026-12-01T15:59:59Z"), "2026-12-01T16:00:00Z"},
		{"tidy-notes", seen, at("2026-12-01T16:00:00Z"), "2026-12-01T22:00:00Z"},
		{"tidy-notes", seen, at("2026-12-03T09:00:00Z"), "2026-12-03T10:00:00Z"},
		{"tidy-notes", seen, at("2026-11-01T00:00:00Z"), "2026-12-01T16:00:00Z"},
		{"tidy-notes", time.Time{}, seen, "2026-12-01T16:00:00Z"},
		// Tuesday 1 December at 11:00 in Berlin: today's 07:00 is before it.
		{"morning-news", seen, at("2026-11-30T00:00:00Z"), "2026-12-02T07:00:00+01:00"},
		{"morning-news", seen, at("2026-12-04T07:00:00+01:00"), "2026-12-07T07:00:00+01:00"},
		{"morning-news", time.Time{}, at("2026-12-01T06:59:00+01:00"), "2026-12-01T07:00:00+01:00"},
	} {
		got := jobs[c.job].Next(c.firstSeen, c.after)
		if got.Format(time.RFC3339) != c.want {
			t.Errorf("%s: Next(%s, %s) = %s, want %s", c.job, c.firstSeen, c.after, got.Format(time.RFC3339), c.want)
		}
	}
	if got := (Job{}).Next(seen, seen); !got.IsZero() {
		t.Errorf("zero Job: Next = %s", got)
	}
}

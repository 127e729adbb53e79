package bxctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// jobsHome is a home with the valid job fixtures and brokerd's record of
// morning-news: one run that ended ok, then one still "running" past its
// deadline (brokerd stopped during it).
func jobsHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	copyFixtures(t, fixtures+"/jobs/valid/jobs", filepath.Join(home, "etc", "jobs"), nil)
	ts := func(d time.Duration) wire.Timestamp {
		v, _ := wire.TimestampOf(time.Now().Add(d).Truncate(time.Millisecond))
		return v
	}
	session, _ := wire.ParseSessionID("job-morning-news-20261201-060000")
	session2, _ := wire.ParseSessionID("job-morning-news-20261202-060000")
	ended := ts(-47 * time.Hour)
	rec := jobRecordFile{Job: "morning-news", FirstSeen: ts(-72 * time.Hour), Runs: []wire.JobRun{
		{Session: session, Trigger: wire.TriggerSchedule, Scheduled: ts(-48 * time.Hour), Started: ts(-48 * time.Hour), Deadline: ts(-47 * time.Hour), Ended: &ended, Outcome: wire.RunOK},
		{Session: session2, Trigger: wire.TriggerSchedule, Scheduled: ts(-24 * time.Hour), Started: ts(-24 * time.Hour), Deadline: ts(-23 * time.Hour), Outcome: wire.RunRunning},
	}}
	data, err := wire.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, "broker", "jobs"), 0o700)
	if err := os.WriteFile(filepath.Join(home, "broker", "jobs", "morning-news.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestJobsWhenBrokerdIsDown: jobs and jobs --json work the list out from
// the job files and brokerd's records when brokerd does not answer: every
// valid job, its next run, its last run (one past its deadline shown
// interrupted, as brokerd would record it).
func TestJobsWhenBrokerdIsDown(t *testing.T) {
	home := jobsHome(t)
	code, out, errOut := run(t, "jobs", "--json", "--home", home)
	var list []wire.JobInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list) != 3 {
		t.Fatalf("jobs --json: %d %v\n%s%s", code, err, out, errOut)
	}
	mn := list[0]
	if mn.Job != "morning-news" || mn.TimeZone != "Europe/Berlin" || mn.Next == nil || mn.Last == nil ||
		mn.Last.Outcome != wire.RunInterrupted || !strings.Contains(mn.Last.Detail, "deadline") {
		t.Errorf("morning-news: %s", out)
	}
	if list[1].Last != nil || list[1].Next == nil {
		t.Errorf("a job brokerd has no record of: %+v", list[1])
	}
	if !strings.Contains(errOut, "brokerd is not answering: read from "+filepath.Join(home, "etc", "jobs")) {
		t.Errorf("stderr does not say where the list came from: %q", errOut)
	}
	code, out, _ = run(t, "jobs", "list", "--home", home)
	if code != 0 || !strings.HasPrefix(out, "JOB ") || !strings.Contains(out, "\nmorning-news ") || !strings.Contains(out, "interrupted at ") {
		t.Errorf("jobs list: %d\n%s", code, out)
	}
}

// TestJobRecordsFollowNoLink: brokerd's record planted as a link to a file
// elsewhere is refused, not read.
func TestJobRecordsFollowNoLink(t *testing.T) {
	home := jobsHome(t)
	elsewhere := filepath.Join(t.TempDir(), "tidy-notes.json")
	os.WriteFile(elsewhere, []byte(`{"job":"tidy-notes","first_seen":"2026-12-01T00:00:00.000Z","last_due":null,"runs":[]}`), 0o600)
	os.Symlink(elsewhere, filepath.Join(home, "broker", "jobs", "tidy-notes.json"))
	if code, out, errOut := run(t, "jobs", "--json", "--home", home); code != 1 || out != "" || !strings.Contains(errOut, "tidy-notes.json") {
		t.Errorf("a linked record: %d\n%s%s", code, out, errOut)
	}
}

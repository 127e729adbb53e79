package jobs

import (
	"testing"
	"time"

	_ "time/tzdata" // Europe/Berlin, whether or not the host has it
)

func mustParseJob(t *testing.T, text string) Job {
	t.Helper()
	j, err := ParseJob("j.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t
}

// Last is the latest due time in (after, now]: what brokerd may start a
// run for, late or caught up.
func TestJobLast(t *testing.T) {
	const deliver = "prompt = \"p\"\ndeliver = \"log\"\n"
	everyMinute := mustParseJob(t, "every = \"1m\"\n"+deliver)
	daily := mustParseJob(t, "schedule = \"0 7 * * *\"\ntime_zone = \"Europe/Berlin\"\n"+deliver)
	yearly := mustParseJob(t, "schedule = \"0 0 1 1 *\"\ntime_zone = \"UTC\"\n"+deliver)
	cases := []struct {
		name                  string
		job                   Job
		firstSeen, after, now string
		want                  string // "" for none
	}{
		{"every: the latest of several", everyMinute, "2026-12-01 07:00:00", "2026-12-01 07:00:00", "2026-12-01 07:05:30", "2026-12-01 07:05:00"},
		{"every: exactly due", everyMinute, "2026-12-01 07:00:00", "2026-12-01 07:00:00", "2026-12-01 07:01:00", "2026-12-01 07:01:00"},
		{"every: not yet due", everyMinute, "2026-12-01 07:00:00", "2026-12-01 07:00:00", "2026-12-01 07:00:59", ""},
		{"every: after the last run", everyMinute, "2026-12-01 07:00:00", "2026-12-01 07:05:00", "2026-12-01 07:05:30", ""},
		{"cron: days of missed runs", daily, "2026-11-01 00:00:00", "2026-11-01 00:00:00", "2026-12-03 10:00:00", "2026-12-03 06:00:00"},
		{"cron: before today's time", daily, "2026-11-01 00:00:00", "2026-11-01 00:00:00", "2026-12-03 05:59:00", "2026-12-02 06:00:00"},
		{"cron: not before first seen", daily, "2026-12-03 06:30:00", "2026-12-03 06:30:00", "2026-12-03 10:00:00", ""},
		{"yearly: months back", yearly, "2026-06-01 00:00:00", "2026-06-01 00:00:00", "2027-03-01 00:00:00", "2027-01-01 00:00:00"},
		{"yearly: already run", yearly, "2026-06-01 00:00:00", "2027-01-01 00:00:00", "2027-03-01 00:00:00", ""},
		{"after is now", everyMinute, "2026-12-01 07:00:00", "2026-12-01 07:05:00", "2026-12-01 07:05:00", ""},
	}
	for _, c := range cases {
		got, ok := c.job.Last(utc(c.firstSeen), utc(c.after), utc(c.now))
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: %s, want none", c.name, got)
		case c.want != "" && (!ok || !got.Equal(utc(c.want))):
			t.Errorf("%s: %s %v, want %s", c.name, got, ok, c.want)
		}
	}
}

func TestJobSessionNames(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 7, 0, time.FixedZone("CET", 3600))
	for owner, want := range map[bool]string{false: "job-nightly-202612010700", true: "job-nightly-20261201070007"} {
		id, err := JobSession("nightly", at, owner)
		if err != nil || id.String() != want || !IsJobSession(id) {
			t.Errorf("owner %v: %s %v, want %s", owner, id, err, want)
		}
	}
	long := "a23456789012345678901234567890123456789012345"
	if _, err := JobSession(long, at, true); err != nil {
		t.Errorf("the longest job id gives no session id: %v", err)
	}
}

func TestTurnLimit(t *testing.T) {
	if got := mustParseJob(t, "every = \"1h\"\nprompt = \"p\"\ndeliver = \"log\"\n").TurnLimit(); got != DefaultMaxTurn {
		t.Errorf("no max_turn: %s, want %s", got, DefaultMaxTurn)
	}
	if got := mustParseJob(t, "every = \"1h\"\nprompt = \"p\"\ndeliver = \"log\"\nmax_turn = \"30s\"\n").TurnLimit(); got != 30*time.Second {
		t.Errorf("max_turn 30s: %s", got)
	}
}

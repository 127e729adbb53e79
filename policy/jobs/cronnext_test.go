package jobs

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whether or not the host has them
)

// nextCase is a schedule, a zone and a start; want lists the runs Next
// finds one after another, as RFC 3339 in the zone.
type nextCase struct {
	name  string
	spec  string
	zone  string
	after string
	want  []string
}

// Days, names, lists, ranges and steps, against crontab(5).
var plainCases = []nextCase{
	{"every minute", "* * * * *", "UTC", "2026-12-01T10:00:30Z", []string{"2026-12-01T10:01:00Z", "2026-12-01T10:02:00Z"}},
	{"steps", "*/20 9 * * *", "UTC", "2026-12-01T09:00:00Z", []string{"2026-12-01T09:20:00Z", "2026-12-01T09:40:00Z", "2026-12-02T09:00:00Z"}},
	{"range with step", "10-40/15 * * * *", "UTC", "2026-12-01T09:00:00Z", []string{"2026-12-01T09:10:00Z", "2026-12-01T09:25:00Z", "2026-12-01T09:40:00Z", "2026-12-01T10:10:00Z"}},
	{"list", "0 7,19 * * *", "UTC", "2026-12-01T08:00:00Z", []string{"2026-12-01T19:00:00Z", "2026-12-02T07:00:00Z"}},
	{"names", "0 9 * DEC Mon-Wed", "UTC", "2026-12-01T09:00:00Z", []string{"2026-12-02T09:00:00Z", "2026-12-07T09:00:00Z"}},
	{"7 is Sunday", "0 0 * * 7", "UTC", "2026-12-01T00:00:00Z", []string{"2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"}},
	{"5-7 ends on Sunday", "0 0 * * 5-7", "UTC", "2026-12-01T00:00:00Z", []string{"2026-12-04T00:00:00Z", "2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-11T00:00:00Z"}},
	// Both day fields restricted: a day matching either runs (13th or Friday).
	{"either day field", "0 0 13 * fri", "UTC", "2026-12-01T00:00:00Z", []string{"2026-12-04T00:00:00Z", "2026-12-11T00:00:00Z", "2026-12-13T00:00:00Z", "2026-12-18T00:00:00Z"}},
	// One day field is *: the other alone decides.
	{"day of month alone", "0 0 13 * *", "UTC", "2026-12-01T00:00:00Z", []string{"2026-12-13T00:00:00Z", "2027-01-13T00:00:00Z"}},
	{"day of week alone", "0 0 * 2 fri", "UTC", "2026-12-01T00:00:00Z", []string{"2027-02-05T00:00:00Z", "2027-02-12T00:00:00Z"}},
	{"31st skips short months", "0 0 31 * *", "UTC", "2026-12-31T00:00:00Z", []string{"2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z"}},
	{"29 February", "0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
	{"@weekly", "@weekly", "UTC", "2026-12-01T00:00:00Z", []string{"2026-12-06T00:00:00Z"}},
	{"in the zone", "0 7 * * *", "Europe/Berlin", "2026-12-01T06:30:00Z", []string{"2026-12-02T07:00:00+01:00"}},
}

// Daylight saving, as Debian's cron(8) documents it: fixed-time jobs in a
// skipped stretch run at the jump, once; in a repeated stretch, once.
// Other jobs follow the wall clock. Changes of 3 hours or more are not
// daylight saving.
var dstCases = []nextCase{
	// Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
	{"skipped time runs at the jump", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
		[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
	{"two skipped times run once", "0,30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
		[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
	{"skipped and real time at the jump run once", "0 2,3 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
		[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
	{"time before the gap is untouched", "30 1 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
		[]string{"2026-03-29T01:30:00+01:00", "2026-03-30T01:30:00+02:00"}},
	{"fixed hours by range are fixed-time", "0 0-23/2 * * *", "Europe/Berlin", "2026-03-29T00:30:00+01:00",
		[]string{"2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"}},
	{"hours by */2 follow the wall clock", "0 */2 * * *", "Europe/Berlin", "2026-03-29T00:30:00+01:00",
		[]string{"2026-03-29T04:00:00+02:00"}},
	{"every 15 minutes over the gap", "*/15 * * * *", "Europe/Berlin", "2026-03-29T01:40:00+01:00",
		[]string{"2026-03-29T01:45:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00"}},
	{"hourly over the gap", "0 * * * *", "Europe/Berlin", "2026-03-29T00:30:00+01:00",
		[]string{"2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"}},
	{"repeated time runs once", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00",
		[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
	{"no second run from inside the repeat", "30 2 * * *", "Europe/Berlin", "2026-10-25T02:10:00+01:00",
		[]string{"2026-10-26T02:30:00+01:00"}},
	{"every 15 minutes over the repeat", "*/15 * * * *", "Europe/Berlin", "2026-10-25T02:40:00+02:00",
		[]string{"2026-10-25T02:45:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T02:15:00+01:00"}},
	{"hourly over the repeat", "0 * * * *", "Europe/Berlin", "2026-10-25T01:30:00+02:00",
		[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"}},
	{"minutes of a fixed hour follow the wall clock", "*/30 2 * * *", "Europe/Berlin", "2026-10-25T01:59:00+02:00",
		[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T02:30:00+01:00", "2026-10-26T02:00:00+01:00"}},
	// New York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
	{"New York gap", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00",
		[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
	{"New York repeat, fixed", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00",
		[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
	{"New York repeat, every 20 minutes", "*/20 1 * * *", "America/New_York", "2026-11-01T00:50:00-04:00",
		[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00",
			"2026-11-01T01:00:00-05:00", "2026-11-01T01:20:00-05:00", "2026-11-01T01:40:00-05:00", "2026-11-02T01:00:00-05:00"}},
	{"New York Sunday job on the change", "0 2 * * sun", "America/New_York", "2026-03-01T12:00:00-05:00",
		[]string{"2026-03-08T03:00:00-04:00", "2026-03-15T02:00:00-04:00"}},
	// Lord Howe moves by half an hour: 2026-10-04 02:00 +10:30 -> 02:30 +11:00.
	{"half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30",
		[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
	// Samoa skipped 30 December 2011 (24 hours forward): a correction.
	{"a day skipped is not daylight saving", "0 12 * * *", "Pacific/Apia", "2011-12-29T13:00:00-10:00",
		[]string{"2011-12-31T12:00:00+14:00"}},
	// Casey moved 3 hours, which is not "less than three hours".
	{"3 hours forward is a correction", "30 3 * * *", "Antarctica/Casey", "2009-10-17T12:00:00+08:00",
		[]string{"2009-10-19T03:30:00+11:00"}},
	{"3 hours back is a correction", "30 0 * * *", "Antarctica/Casey", "2010-03-04T12:00:00+11:00",
		[]string{"2010-03-05T00:30:00+11:00", "2010-03-05T00:30:00+08:00", "2010-03-06T00:30:00+08:00"}},
}

func TestCronNext(t *testing.T) {
	for _, table := range [][]nextCase{plainCases, dstCases} {
		for _, c := range table {
			t.Run(c.name, func(t *testing.T) { runNextCase(t, c) })
		}
	}
}

func runNextCase(t *testing.T, c nextCase) {
	t.Helper()
	cron, err := ParseCron(c.spec)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(c.zone)
	if err != nil {
		t.Fatal(err)
	}
	at := mustTime(t, c.after)
	for i, want := range c.want {
		at = cron.Next(at, loc)
		if got := at.Format(time.RFC3339); got != want {
			t.Fatalf("%q in %s: run %d after %s is %s, want %s", c.spec, c.zone, i+1, c.after, got, want)
		}
	}
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// Next agrees with a minute-by-minute walk of the wall clock for schedules
// that follow it, across a year of Berlin's changes.
func TestCronNextMatchesWallClockWalk(t *testing.T) {
	loc, _ := time.LoadLocation("Europe/Berlin")
	for _, spec := range []string{"*/7 * * * *", "0 * * * *", "*/30 2 * * *", "0 */2 * * sun"} {
		c, err := ParseCron(spec)
		if err != nil {
			t.Fatal(err)
		}
		at := mustTime(t, "2026-03-28T00:00:00+01:00")
		for walk := at; walk.Before(mustTime(t, "2026-03-30T00:00:00+02:00")); walk = walk.Add(time.Minute) {
			if !c.matchesWallClock(walk.Add(time.Minute).In(loc)) {
				continue
			}
			want := walk.Add(time.Minute)
			if got := c.Next(walk, loc); !got.Equal(want) {
				t.Fatalf("%q: Next(%s) = %s, want %s", spec, walk.In(loc), got, want.In(loc))
			}
		}
	}
}

// matchesWallClock reports whether t's wall clock in its own zone is a
// minute c names: the naive rule, for checking Next.
func (c Cron) matchesWallClock(t time.Time) bool {
	w := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	found, ok := c.nextWall(w, w)
	return ok && found.Equal(w)
}

func TestCronNextZero(t *testing.T) {
	if got := (Cron{}).Next(time.Now(), time.UTC); !got.IsZero() {
		t.Errorf("zero Cron: Next = %s, want the zero Time", got)
	}
	c, _ := ParseCron("* * * * *")
	if got := c.Next(time.Now(), nil); !got.IsZero() {
		t.Errorf("nil zone: Next = %s, want the zero Time", got)
	}
}

package jobs

import (
	"slices"
	"time"
)

// bigJump is where cron(8) stops treating a clock change as daylight
// saving: "Time changes of more than 3 hours are considered to be
// corrections to the clock or the timezone, and the new time is used
// immediately."
const bigJump = 3 * time.Hour

// searchYears bounds the search for the next run. A schedule ParseCron
// accepts runs at least once in eight years (29 February, skipping 2100).
const searchYears = 30

// Next returns the first instant strictly after `after` at which c runs,
// on the wall clock of loc, in loc; the zero Time when there is none in
// the next thirty years. Daylight-saving changes are handled as Debian's
// cron(8) documents:
//   - A fixed-time schedule (FixedTime: neither minute nor hour is a
//     wildcard) whose time falls in a skipped stretch (spring forward) runs
//     at the instant of the jump, once however many of its times fell
//     there; a time that happens twice (fall back) runs the first time
//     only.
//   - Any other schedule runs whenever the wall clock shows a time it
//     names: never in a skipped stretch, and again when a stretch repeats.
//     So */15 keeps running every 15 real minutes through both changes.
//   - A change of 3 hours or more is no daylight saving: skipped times do
//     not run and repeated times run again, for every schedule.
func (c Cron) Next(after time.Time, loc *time.Location) time.Time {
	if c.IsZero() || loc == nil {
		return time.Time{}
	}
	// A wall time w happens at w minus the offset in force, so the first
	// wall time that can happen after `after` is `after` plus the smallest
	// offset around it. Wall times are minutes whose fields are read in UTC.
	minOff, _ := offsetRange(zonePeriods(loc, after))
	w := wallMinute(after.Add(minOff))
	limit := w.AddDate(searchYears, 0, 0)
	var best time.Time
	for {
		var ok bool
		if w, ok = c.nextWall(w, limit); !ok {
			return best
		}
		periods := zonePeriods(loc, w)
		// Every instant of w and of any later wall time is at least w minus
		// the largest offset: none can beat best once that is not earlier.
		if _, maxOff := offsetRange(periods); !best.IsZero() && !w.Add(-maxOff).Before(best) {
			return best
		}
		for _, t := range c.instants(periods, w) {
			if t.After(after) && (best.IsZero() || t.Before(best)) {
				best = t.In(loc)
			}
		}
		w = w.Add(time.Minute)
	}
}

// wallMinute is the minute t falls in, read in UTC, as a wall time.
func wallMinute(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
}

// instants returns the instants at which c runs for the wall time w.
func (c Cron) instants(periods []zonePeriod, w time.Time) []time.Time {
	ts := wallInstants(periods, w)
	if !c.fixedTime {
		return ts
	}
	switch {
	case len(ts) == 0:
		if jump, size, ok := skippedBy(periods, w); ok && size < bigJump {
			return []time.Time{jump}
		}
	case len(ts) > 1 && ts[1].Sub(ts[0]) < bigJump:
		return ts[:1]
	}
	return ts
}

// zonePeriod is a stretch of time in which loc keeps one UTC offset.
type zonePeriod struct {
	start, end time.Time // zero: unbounded
	offset     time.Duration
}

func (p zonePeriod) contains(t time.Time) bool {
	return (p.start.IsZero() || !t.Before(p.start)) && (p.end.IsZero() || t.Before(p.end))
}

// zonePeriods lists loc's periods within 26 hours of t, oldest first: wide
// enough for every instant whose wall clock could read t (offsets stay
// within -12 and +14 hours) and every jump that could skip it.
func zonePeriods(loc *time.Location, t time.Time) []zonePeriod {
	const window = 26 * time.Hour
	at, to := t.Add(-window).In(loc), t.Add(window)
	var periods []zonePeriod
	for {
		start, end := at.ZoneBounds()
		_, off := at.Zone()
		periods = append(periods, zonePeriod{start, end, time.Duration(off) * time.Second})
		if end.IsZero() || end.After(to) {
			return periods
		}
		at = end
	}
}

func offsetRange(periods []zonePeriod) (lo, hi time.Duration) {
	lo, hi = periods[0].offset, periods[0].offset
	for _, p := range periods[1:] {
		lo, hi = min(lo, p.offset), max(hi, p.offset)
	}
	return lo, hi
}

// wallInstants returns the instants, earliest first, at which the wall
// clock reads w: none in a skipped stretch, two in a repeated one.
func wallInstants(periods []zonePeriod, w time.Time) []time.Time {
	var ts []time.Time
	for _, p := range periods {
		if t := w.Add(-p.offset); p.contains(t) {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts
}

// skippedBy finds the forward jump that skips wall time w: the instant of
// the jump and how far the clock moved.
func skippedBy(periods []zonePeriod, w time.Time) (time.Time, time.Duration, bool) {
	for i := 1; i < len(periods); i++ {
		before, after := periods[i-1].offset, periods[i].offset
		jump := periods[i].start
		if after > before && !w.Before(jump.Add(before)) && w.Before(jump.Add(after)) {
			return jump, after - before, true
		}
	}
	return time.Time{}, 0, false
}

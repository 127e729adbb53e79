package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron is a five-field cron schedule: minute, hour, day of month, month and
// day of week, as crontab(5) writes them. Only ParseCron makes one; the zero
// Cron names no time, and Next on it finds none.
type Cron struct {
	spec string
	// Bit n of a set is on when value n matches. Day of week 7 is folded
	// into 0, so both mean Sunday.
	minute, hour, dom, month, dow uint64
	// domStar and dowStar say the field was written "*": cron joins the two
	// day fields with "and" when either is unrestricted, else with "or".
	domStar, dowStar bool
	// fixedTime says neither the minute nor the hour field starts with '*':
	// cron(8)'s daylight-saving rule applies to such jobs only.
	fixedTime bool
}

// cronField is one of the five fields: its range and, for month and day of
// week, the names cron accepts for its values.
type cronField struct {
	name     string
	min, max int
	names    []string // names[v-min] names value v
}

var cronFields = [5]cronField{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{"day of week", 0, 7, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// cronMacros are Vixie cron's shorthands, as its crontab(5) defines them.
// @reboot is left out on purpose: it names no time (see ParseCron).
var cronMacros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// ParseCron parses a five-field schedule. Each field is "*" or a
// comma-separated list of values and ranges (a-b), where "*" and ranges
// may take a step (*/15, 1-31/2); month and day of week also take the
// English three-letter names, in any case, and day of week 7 is Sunday.
// Errors say which field is wrong and why.
func ParseCron(spec string) (Cron, error) {
	text := strings.TrimSpace(spec)
	if strings.HasPrefix(text, "@") {
		expanded, ok := cronMacros[strings.ToLower(text)]
		if !ok {
			return Cron{}, macroError(text)
		}
		text = expanded
	}
	fields := strings.Fields(text)
	if len(fields) != len(cronFields) {
		return Cron{}, fmt.Errorf("schedule %q has %d fields; cron has five: minute hour day-of-month month day-of-week (no seconds, no year)", spec, len(fields))
	}
	c := Cron{spec: spec}
	sets := [5]*uint64{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, f := range cronFields {
		bits, err := f.parse(fields[i])
		if err != nil {
			return Cron{}, fmt.Errorf("schedule %q: %v", spec, err)
		}
		*sets[i] = bits
	}
	c.dow = foldSunday(c.dow)
	c.domStar, c.dowStar = fields[2] == "*", fields[4] == "*"
	c.fixedTime = !strings.HasPrefix(fields[0], "*") && !strings.HasPrefix(fields[1], "*")
	if err := c.checkDays(fields[2], fields[4]); err != nil {
		return Cron{}, fmt.Errorf("schedule %q: %v", spec, err)
	}
	return c, nil
}

func macroError(text string) error {
	if strings.EqualFold(text, "@reboot") {
		return fmt.Errorf("schedule %q: @reboot names no time; set catch_up = true to make up a run missed while boxmaker was down, or start one with `boxmaker jobs run`", text)
	}
	return fmt.Errorf("schedule %q: the shorthands are @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly", text)
}

// foldSunday turns day of week 7 into 0.
func foldSunday(dow uint64) uint64 {
	if dow&(1<<7) != 0 {
		dow = dow&^(1<<7) | 1
	}
	return dow
}

// parse reads one field into a set of values.
func (f cronField) parse(text string) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(text, ",") {
		lo, hi, step, err := f.parseItem(item)
		if err != nil {
			return 0, err
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

// parseItem reads one list item: *, a value or a range, with its step.
func (f cronField) parseItem(item string) (lo, hi, step int, err error) {
	if item == "" {
		return 0, 0, 0, fmt.Errorf("%s: an empty item in a list", f.name)
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	step = 1
	if hasStep {
		if step, err = strconv.Atoi(stepText); err != nil || step < 1 || step > f.max {
			return 0, 0, 0, fmt.Errorf("%s: step %q must be a number from 1 to %d", f.name, stepText, f.max)
		}
	}
	loText, hiText, isRange := strings.Cut(rng, "-")
	switch {
	case rng == "*":
		return f.min, f.max, step, nil
	case !isRange && hasStep:
		// crontab(5) allows steps after * and ranges only; robfig/cron
		// reads 5/15 as 5-59/15 and others refuse it, so say which is meant.
		return 0, 0, 0, fmt.Errorf("%s: a step needs a range or *: write %s-%d/%s or */%s", f.name, rng, f.max, stepText, stepText)
	case !isRange:
		loText, hiText = rng, rng
	}
	if lo, err = f.value(loText); err != nil {
		return 0, 0, 0, err
	}
	if hi, err = f.value(hiText); err != nil {
		return 0, 0, 0, err
	}
	if lo > hi {
		return 0, 0, 0, fmt.Errorf("%s: range %s runs backwards; a range cannot wrap around, write two (e.g. %s-%d,%d-%s)", f.name, rng, loText, f.max, f.min, hiText)
	}
	return lo, hi, step, nil
}

// value reads a number in the field's range, or one of its names.
func (f cronField) value(text string) (int, error) {
	for i, name := range f.names {
		if strings.EqualFold(text, name) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < f.min || v > f.max || strings.HasPrefix(text, "+") {
		hint := ""
		if f.names != nil {
			hint = fmt.Sprintf(" or a name %s-%s", f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("%s: %q is not a number from %d to %d%s", f.name, text, f.min, f.max, hint)
	}
	return v, nil
}

// checkDays refuses two kinds of day fields: those that can never match,
// and those whose meaning differs between cron's manual and its code.
func (c Cron) checkDays(domText, dowText string) error {
	// crontab(5) joins the day fields with "or" when both are restricted,
	// "(ie, aren't *)"; Vixie cron's code asks whether a field starts with
	// '*', so */2 is unrestricted there and restricted in the manual.
	// Refuse the one form whose days depend on which is believed.
	for _, f := range []struct{ text, other, name, spelled string }{
		{domText, dowText, "day of month", "1-31"}, {dowText, domText, "day of week", "0-6"},
	} {
		if strings.HasPrefix(f.text, "*/") && f.other != "*" {
			return fmt.Errorf("%s %s with the other day field restricted means either day in cron's manual but both days in Vixie cron; write %s%s to run on either",
				f.name, f.text, f.spelled, strings.TrimPrefix(f.text, "*"))
		}
	}
	if c.domStar || !c.dowStar {
		return nil
	}
	// Only the day of month decides: some chosen month must have a chosen day.
	for m := 1; m <= 12; m++ {
		if c.month&(1<<m) != 0 && c.dom&((1<<(daysIn(time.Month(m))+1))-2) != 0 {
			return nil
		}
	}
	return errors.New("it never runs: no month it names has a day it names")
}

// daysIn is the most days month m can have: February counts 29.
func daysIn(m time.Month) int {
	return time.Date(2000, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// String is the schedule as written.
func (c Cron) String() string { return c.spec }

// IsZero reports whether c is the zero Cron, which ParseCron never returns.
func (c Cron) IsZero() bool { return c.minute == 0 }

// FixedTime reports whether cron(8)'s daylight-saving rule applies to c:
// its minute and hour fields are not wildcards, so it runs at set times.
func (c Cron) FixedTime() bool { return c.fixedTime }

// matchesDay applies cron's rule: when both day fields are restricted, a
// day matching either runs; otherwise both must match (one matches all).
func (c Cron) matchesDay(w time.Time) bool {
	domOK, dowOK := has(c.dom, w.Day()), has(c.dow, int(w.Weekday()))
	if c.domStar || c.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

func has(set uint64, v int) bool { return set&(1<<v) != 0 }

// nextWall returns the first wall-clock minute at or after w (a minute, its
// fields read in UTC) that c names, searching no later than limit.
func (c Cron) nextWall(w, limit time.Time) (time.Time, bool) {
	for !w.After(limit) {
		switch {
		case !has(c.month, int(w.Month())):
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.matchesDay(w):
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
		case !has(c.hour, w.Hour()):
			w = time.Date(w.Year(), w.Month(), w.Day(), w.Hour()+1, 0, 0, 0, time.UTC)
		case !has(c.minute, w.Minute()):
			w = w.Add(time.Minute)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

package jobs

import (
	"strings"
	"testing"
	"time"
)

// Each spec parses to the sets crontab(5) says it names.
func TestParseCronSets(t *testing.T) {
	for _, c := range []struct {
		spec                          string
		minute, hour, dom, month, dow []int // nil: every value
		fixedTime                     bool
	}{
		{"* * * * *", nil, nil, nil, nil, nil, false},
		{"0 7 * * *", []int{0}, []int{7}, nil, nil, nil, true},
		{"*/15 9-17 * * mon-fri", []int{0, 15, 30, 45}, []int{9, 10, 11, 12, 13, 14, 15, 16, 17}, nil, nil, []int{1, 2, 3, 4, 5}, false},
		{"0 0-23/6 1,15 * *", []int{0}, []int{0, 6, 12, 18}, []int{1, 15}, nil, nil, true},
		{"5 4 * JAN,jul Sun", []int{5}, []int{4}, nil, []int{1, 7}, []int{0}, true},
		{"0 12 * * 7", []int{0}, []int{12}, nil, nil, []int{0}, true},
		{"0 12 * * 0,7", []int{0}, []int{12}, nil, nil, []int{0}, true},
		{"0 12 * * */2", []int{0}, []int{12}, nil, nil, []int{0, 2, 4, 6}, true},
		{"0 */2 * * *", []int{0}, []int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}, nil, nil, nil, false},
		{"@daily", []int{0}, []int{0}, nil, nil, nil, true},
		{"@HOURLY", []int{0}, nil, nil, nil, nil, false},
		{"  0   7 * *   1  ", []int{0}, []int{7}, nil, nil, []int{1}, true},
	} {
		cron, err := ParseCron(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		for i, want := range [][]int{c.minute, c.hour, c.dom, c.month, c.dow} {
			f := cronFields[i]
			if want == nil {
				want = everyValue(i)
			}
			got := []uint64{cron.minute, cron.hour, cron.dom, cron.month, cron.dow}[i]
			if got != setOf(want) {
				t.Errorf("%q: %s is %b, want %v", c.spec, f.name, got, want)
			}
		}
		if cron.FixedTime() != c.fixedTime || cron.String() != c.spec {
			t.Errorf("%q: FixedTime %t, String %q", c.spec, cron.FixedTime(), cron.String())
		}
	}
}

// everyValue lists what "*" names in field i: day of week 7 is folded
// into 0.
func everyValue(i int) []int {
	f := cronFields[i]
	if f.name == "day of week" {
		f.max = 6
	}
	var vs []int
	for v := f.min; v <= f.max; v++ {
		vs = append(vs, v)
	}
	return vs
}

func setOf(vs []int) uint64 {
	var bits uint64
	for _, v := range vs {
		bits |= 1 << v
	}
	return bits
}

// Each bad spec is refused with a reason that names what is wrong.
func TestParseCronErrors(t *testing.T) {
	for _, c := range []struct{ spec, gist string }{
		{"", "has 0 fields"},
		{"0 7 * *", "has 4 fields; cron has five"},
		{"0 0 7 * * *", "has 6 fields"},
		{"60 * * * *", `minute: "60" is not a number from 0 to 59`},
		{"* 24 * * *", `hour: "24" is not a number from 0 to 23`},
		{"* * 0 * *", `day of month: "0" is not a number from 1 to 31`},
		{"* * * 13 *", `month: "13" is not a number from 1 to 12 or a name jan-dec`},
		{"* * * * 8", `day of week: "8" is not a number from 0 to 7 or a name sun-sat`},
		{"* * * * monday", `"monday" is not a number`},
		{"* * * * +1", `"+1" is not a number`},
		{"1,,2 * * * *", "minute: an empty item in a list"},
		{"*/0 * * * *", `minute: step "0" must be a number from 1 to 59`},
		{"*/x * * * *", `step "x"`},
		{"5/15 * * * *", "minute: a step needs a range or *: write 5-59/15 or */15"},
		{"30-10 * * * *", "minute: range 30-10 runs backwards"},
		{"0 0 * * fri-mon", "day of week: range fri-mon runs backwards"},
		{"? * * * *", `"?" is not a number`},
		{"0 0 30 2 *", "it never runs"},
		{"0 0 31 4,6,9,11 *", "it never runs"},
		{"0 0 */2 * mon", "day of month */2 with the other day field restricted means either day in cron's manual but both days in Vixie cron; write 1-31/2"},
		{"0 0 1 * */2", "write 0-6/2"},
		{"@reboot", "@reboot names no time"},
		{"@often", "the shorthands are @yearly"},
	} {
		_, err := ParseCron(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.gist) {
			t.Errorf("ParseCron(%q): %v, want %q", c.spec, err, c.gist)
		}
	}
}

// ParseCron never panics, and whatever it accepts has next runs that rise,
// across Berlin's daylight-saving changes too.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 7 * * 1-5", "*/15 9-17 * jan-mar sun", "@weekly", "0 0 29 2 *", "1-5/2,7 */3 1,15 * 7", "30 2 * * *"} {
		f.Add(s)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := ParseCron(spec)
		if err != nil {
			return
		}
		for _, from := range []string{"2026-03-29T00:30:00Z", "2026-10-25T00:30:00Z"} {
			at := mustTime(t, from)
			for range 3 {
				next := c.Next(at, berlin)
				if !next.After(at) {
					t.Fatalf("%q: Next(%s) = %s", spec, at, next)
				}
				at = next
			}
		}
	})
}

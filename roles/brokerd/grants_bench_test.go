package brokerd

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"boxmaker/wire"
)

// manyGrants is n grant files of every tool, none of which allows
// `rm -rf /`: the shell ones are patterns for other commands.
func manyGrants(n int) map[string]string {
	grants := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("g%04d", i)
		switch i % 4 {
		case 0:
			grants[id] = fmt.Sprintf("tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\nhosts = [\"site%d.example\", \"*.docs%d.example\"]\n", i, i)
		case 1:
			grants[id] = fmt.Sprintf("tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"dir%d\", \"dir%d/sub\"]\n", i, i)
		case 2:
			grants[id] = fmt.Sprintf("tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"cmd%d( [a-z]+)*\"]\n", i)
		default:
			grants[id] = fmt.Sprintf("tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"echo%d .*\"]\n", i)
		}
	}
	return grants
}

// BenchmarkDeniedCallGrants is a denied call (decided, audited with its
// fsync, answered) under 1,000 grant files, against the same call under 10
// files measured in the same run, call for call: grants are parsed once and
// only changes are read again, so the count of files should hardly matter
// (issue 15: at most 1.5 times).
func BenchmarkDeniedCallGrants(b *testing.B) {
	many, few := newHome(b, "", manyGrants(1000)), newHome(b, "", manyGrants(10))
	many.start()
	few.start()
	cm, cf := dialLoopd(b, many), dialLoopd(b, few)
	s, _ := wire.ParseSessionID("bench")
	call := func(h *home, c func() error) time.Duration {
		start := time.Now()
		if err := c(); err != nil {
			b.Fatalf("%v\n%s", err, h.log)
		}
		return time.Since(start)
	}
	var dm, df []time.Duration
	for b.Loop() {
		dm = append(dm, call(many, func() error { return expect[wire.Denied](cm, s, `{"command":"rm -rf /"}`) }))
		df = append(df, call(few, func() error { return expect[wire.Denied](cf, s, `{"command":"rm -rf /"}`) }))
	}
	reportVsRef(b, dm, df)
}

// reportVsRef reports the p50 of ds and of its reference refs, measured in
// the same run, and their ratio.
func reportVsRef(b *testing.B, ds, refs []time.Duration) {
	p50 := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	got, ref := p50(ds), p50(refs)
	b.ReportMetric(float64(got.Microseconds()), "p50-µs")
	b.ReportMetric(float64(ref.Microseconds()), "ref-p50-µs")
	b.ReportMetric(float64(got)/float64(ref), "x-vs-ref")
}

package policy

import (
	"fmt"
	"testing"

	"boxmaker/wire"
)

// grants100 is a hundred grants of every dimension, the kind of set an owner
// might keep: the fetch grants are the ones a fetch decision reads.
func grants100(b *testing.B) []Grant {
	bodies := map[string]string{}
	for i := range 100 {
		id := fmt.Sprintf("g%03d", i)
		switch i % 4 {
		case 0:
			bodies[id] = fmt.Sprintf("tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\nhosts = [\"site%d.example\", \"*.docs%d.example\", \"127.0.0.%d\"]\n", i, i, i)
		case 1:
			bodies[id] = fmt.Sprintf("tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"dir%d\", \"dir%d/sub\"]\n", i, i)
		case 2:
			bodies[id] = fmt.Sprintf("tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"cmd%d( [a-z]+)*\"]\n", i)
		default:
			bodies[id] = fmt.Sprintf("tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\nhosts = [\"*.wiki%d.example\"]\n", i)
		}
	}
	return grantSet(b, bodies)
}

// BenchmarkDecide100 decides one fetch over 100 grants, half of them for
// http_fetch, which the URL matches at the end of the id order.
func BenchmarkDecide100(b *testing.B) {
	grants := grants100(b)
	req := Request{Tool: "http_fetch", Arguments: `{"url":"https://en.wiki99.example/wiki/Go"}`, Taint: wire.Private, Now: t0}
	d, err := Decide(grants, req)
	if err != nil || d.Outcome() != AwaitsApproval {
		b.Fatalf("%v %v\n%s", d.Outcome(), err, explanation(d))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decide(grants, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecide100Shell is the same over shell patterns.
func BenchmarkDecide100Shell(b *testing.B) {
	grants := grants100(b)
	req := Request{Tool: "shell", Arguments: `{"command":"cmd98 a b c"}`, Taint: wire.Private, Now: t0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decide(grants, req); err != nil {
			b.Fatal(err)
		}
	}
}

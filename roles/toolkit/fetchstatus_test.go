//go:build linux && amd64

package toolkit

import (
	"context"
	"strings"
	"testing"

	"boxmaker/roles/internal/toolrun"
)

// TestEgressReasonReachesTheResult: when egressd answers a fetch itself
// (here: the name did not resolve), its reason is the failure's text, not
// a bare "status 502"; an upstream's own 502 stays a status.
func TestEgressReasonReachesTheResult(t *testing.T) {
	reason := "could not resolve example.org: the name server did not answer within 5s (is this machine offline?)"
	for _, c := range []struct {
		header, body, want string
	}{
		// egressPeer writes its content type into the head as given, so
		// a second header line rides along after it.
		{"text/plain; charset=utf-8\r\nX-Boxmaker-Error: upstream", reason + "\n", "http_fetch: egressd: " + reason},
		{"text/plain; charset=utf-8", reason + "\n", "http_fetch: status 502"},
	} {
		near, _ := egressPeer(t, 502, c.header, c.body)
		tl := &tools{egress: egressConnFor(t, near), job: toolrun.Job{Tool: "http_fetch",
			Arguments: `{"url":"https://example.org/"}`, Limits: testLimits(), Egress: true}}
		if out := tl.run(context.Background()); out.OK || out.Content != c.want {
			t.Errorf("%q: %+v, want %q", strings.SplitN(c.header, "\r\n", 2), out, c.want)
		}
	}
}

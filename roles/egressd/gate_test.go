package egressd

import (
	"context"
	"testing"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
)

// egress.sock serves exactly its row of the role table, with the table's
// peer check (Options.AllowPeer left nil): every other kind the wire
// defines is refused at the gate, egress_open with its descriptor gets
// past it to the call.
func TestEgressSockServesItsPair(t *testing.T) {
	h := startEgressd(t, Options{})
	pair, _ := roles.PairOf("brokerd", "egressd")
	gateprobe.Frames(t, h.path, pair)
}

// egress.sock answers exactly the kinds the role table lets through it:
// none the gate passes falls to "internal", none is answered that the
// gate refuses.
func TestEveryEgressKindHasItsRow(t *testing.T) {
	if err := sock.CheckKinds(sock.Accepted("", "egressd"), (&server{}).kinds(context.Background())); err != nil {
		t.Error(err)
	}
}

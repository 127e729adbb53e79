package egressd

import (
	"testing"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
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

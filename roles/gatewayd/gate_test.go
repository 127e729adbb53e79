package gatewayd

import (
	"testing"
	"time"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// gateway.sock serves exactly its row of the role table, with the table's
// peer check (Options.AllowPeer left nil): every other kind the wire
// defines is refused at the gate. approval_request gets past it; the one
// sent has an id gatewayd will not show, so that its handler answers at
// once instead of holding the request for the owner.
func TestGatewaySockServesItsPair(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	start(t, w, paths, func(o *Options) { o.AllowPeer = nil })
	path, _ := sock.PathOf(paths, "brokerd", "gatewayd")
	pair, _ := roles.PairOf("brokerd", "gatewayd")
	answeredAtOnce := wire.Envelope{ID: 1, Final: true, Msg: request(t, "has space", "chat-1", time.Now().Add(time.Minute))}
	gateprobe.Frames(t, path, pair, answeredAtOnce)
}

// gateway.sock answers exactly the kinds the role table lets through each
// of its pairs.
func TestEveryGatewayKindHasItsRow(t *testing.T) {
	g := &gateway{}
	for client, kinds := range map[string]sock.Kinds{"brokerd": g.brokerKinds(t.Context()), "witnessd": g.witnessKinds()} {
		if err := sock.CheckKinds(sock.Accepted(client, "gatewayd"), kinds); err != nil {
			t.Errorf("%s-gatewayd: %v", client, err)
		}
	}
}

package brokerd

import (
	"testing"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
)

// Each of brokerd's sockets, in the real binary, serves exactly its row of
// the role table: every kind the wire defines that the row does not list
// is refused at the gate (an approval on loopd's socket above all), every
// listed kind gets past it to brokerd's handler.
func TestBrokerSocketsServeTheirPairs(t *testing.T) {
	h := newHome(t, "", nil)
	h.start()
	for _, pair := range roles.ListensOn("brokerd") {
		t.Run(pair.Dir(), func(t *testing.T) {
			gateprobe.Frames(t, h.socket(pair.Client), pair)
		})
	}
}

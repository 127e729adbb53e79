package loopd

import (
	"testing"

	"boxmaker/fixtures/gateprobe"
	"boxmaker/roles"
)

// Each of loopd's sockets serves exactly its row of the role table: every
// kind the wire defines that the row does not list is refused at the gate
// (approvals above all, which go from the owner to brokerd only), every
// listed kind gets past it to loopd's handler.
func TestLoopSocketsServeTheirPairs(t *testing.T) {
	e := newEnv(t, envOptions{})
	// job_deliveries is held open until a job's reply is there: with one
	// waiting, loopd answers the probe's at once.
	e.queueDelivery()
	for _, pair := range roles.ListensOn("loopd") {
		t.Run(pair.Dir(), func(t *testing.T) {
			gateprobe.Frames(t, e.socket(pair.Client, pair.Listener), pair)
		})
	}
}

package brokerd

import (
	"testing"

	"boxmaker/roles/internal/sock"
)

// Each of brokerd's sockets answers exactly the kinds the role table lets
// through it: none the gate passes falls to "internal", none is answered
// that the gate refuses.
func TestEverySocketKindHasItsRow(t *testing.T) {
	b := &broker{}
	for client, kinds := range map[string]sock.Kinds{"loopd": b.toolKinds(), "bxctl": b.adminKinds()} {
		if err := sock.CheckKinds(sock.Accepted(client, "brokerd"), kinds); err != nil {
			t.Errorf("%s-brokerd: %v", client, err)
		}
	}
}

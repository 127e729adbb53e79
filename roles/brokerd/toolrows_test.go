package brokerd

import (
	"errors"
	"testing"

	"boxmaker/policy"
	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// brokerd builds every sandbox from the tool's catalog row, so each mount
// kind and egress target a row names must be one it knows: a new row with
// a new kind fails here, not at run time. The calls below fail for other
// reasons (a zero grant covers nothing), which is all they need to show.
func TestEveryMountKindIsBuilt(t *testing.T) {
	for _, tool := range wire.Tools() {
		_, err := mountsOf(tool.Sandbox.Mount, policy.Grant{}, "", t.TempDir())
		if errors.Is(err, errNoMountKind) {
			t.Errorf("%s: %v", tool.Name, err)
		}
	}
}

func TestEveryEgressTargetIsConnected(t *testing.T) {
	job := toolrun.Job{Consult: &toolrun.Consult{URL: "https://api.example.test/v1", Model: "m"}}
	for _, tool := range wire.Tools() {
		if !tool.Sandbox.Egress.Needed() {
			continue
		}
		if _, err := egressHosts(tool.Sandbox.Egress.To, policy.Grant{}, job); errors.Is(err, errNoEgressTarget) {
			t.Errorf("%s: %v", tool.Name, err)
		}
	}
	if hosts, err := egressHosts(wire.ConsultEndpoint, policy.Grant{}, job); err != nil || len(hosts) != 1 || hosts[0] != "api.example.test" {
		t.Errorf("the consult endpoint gives hosts %v, %v", hosts, err)
	}
}

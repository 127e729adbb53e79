package brokerd

import (
	"errors"
	"strings"
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

// A tool without a subject rule of its own shows its canonical arguments,
// clipped, so that the owner never approves a call shown as nothing.
func TestArgumentsSubject(t *testing.T) {
	args, err := wire.DecodeToolArgs("shell", "{ \"command\" : \"ls\\n\" }")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := argumentsSubject(args), `{"command":"ls\n"} (18 bytes)`; got != want {
		t.Errorf("argumentsSubject = %q, want %q", got, want)
	}
	long, _ := wire.DecodeToolArgs("consult", `{"prompt":"`+strings.Repeat("a", 300)+`"}`)
	if got := argumentsSubject(long); !strings.HasSuffix(got, "… (313 bytes)") {
		t.Errorf("a long call's subject is not clipped: %q", got)
	}
}

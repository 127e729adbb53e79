package sock

import (
	"context"
	"os"
	"strings"
	"testing"

	"boxmaker/wire"
)

func answersWith(m wire.Message) Handler {
	return func(_ context.Context, _ Peer, _ wire.Envelope, reply Replier) error {
		return reply(wire.Envelope{Final: true, Msg: m})
	}
}

// A kind the gate lets through with no row is refused at start; each kind
// is answered by its own row.
func TestRouteNeedsARowForEveryAcceptedKind(t *testing.T) {
	s := &Server{Name: "brokerd (loopd-brokerd)", Accepts: []string{"tool_list", "job_list"}}
	k := Kinds{"tool_list": answersWith(wire.ToolListResult{})}
	if err := k.Route(s); err == nil || !strings.Contains(err.Error(), "job_list") || s.Handle != nil {
		t.Fatalf("a socket with an unanswered kind started: %v", err)
	}
	k["job_list"] = answersWith(wire.JobListResult{})
	if err := k.Route(s); err != nil {
		t.Fatal(err)
	}
	var got wire.Message
	reply := func(e wire.Envelope) error { got = e.Msg; return nil }
	if err := s.Handle(context.Background(), Peer{}, wire.Envelope{Msg: wire.JobList{}}, reply); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(wire.JobListResult); !ok {
		t.Errorf("job_list was answered %T", got)
	}
}

// CheckKinds holds a table to exactly what the sockets accept.
func TestCheckKinds(t *testing.T) {
	k := Kinds{"tool_list": answersWith(nil), "notes_list": answersWith(nil)}
	err := CheckKinds([]string{"tool_list", "tool_request"}, k)
	if err == nil || !strings.Contains(err.Error(), "tool_request is accepted, and nothing answers it") ||
		!strings.Contains(err.Error(), "notes_list has a row, and no socket accepts it") {
		t.Errorf("CheckKinds: %v", err)
	}
	if err := CheckKinds([]string{"tool_list", "notes_list"}, k); err != nil {
		t.Error(err)
	}
	if got := Accepted("witnessd", "gatewayd"); len(got) != 1 || got[0] != "checkpoint_post" {
		t.Errorf("Accepted(witnessd, gatewayd) = %v", got)
	}
}

// A descriptor socket's table is held to its kinds the same way, and its
// rows get the frame's descriptor.
func TestFileRouteNeedsARowForEveryAcceptedKind(t *testing.T) {
	s := &Server{Name: "egressd (brokerd-egressd)", Accepts: []string{"egress_open"}}
	k := FileKinds{}
	if err := k.Route(s); err == nil || !strings.Contains(err.Error(), "egress_open") || s.HandleFile != nil {
		t.Fatalf("a socket with an unanswered kind started: %v", err)
	}
	var got *os.File
	k["egress_open"] = func(_ context.Context, _ Peer, _ wire.Envelope, f *os.File, _ Replier) error { got = f; return nil }
	if err := k.Route(s); err != nil || s.Handle != nil {
		t.Fatalf("Route = %v, Handle set: %v", err, s.Handle != nil)
	}
	if err := s.HandleFile(context.Background(), Peer{}, wire.Envelope{Msg: wire.EgressOpen{}}, os.Stdin, nil); err != nil || got != os.Stdin {
		t.Fatalf("egress_open was answered %v, with %v", err, got)
	}
}

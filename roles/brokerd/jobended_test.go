package brokerd

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// gatewayEnds listens where gatewayd would and notes each job_ended.
func gatewayEnds(t *testing.T, path string) func() []wire.JobEnded {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := sock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ends []wire.JobEnded
	srv := &sock.Server{Name: "gatewayd stand-in", Accepts: []string{"job_ended"}, AllowPeer: func(sock.Peer) bool { return true },
		Log: log.New(io.Discard, "", 0), Handle: func(_ context.Context, _ sock.Peer, e wire.Envelope, reply sock.Replier) error {
			end := e.Msg.(wire.JobEnded)
			mu.Lock()
			ends = append(ends, end)
			mu.Unlock()
			return reply(wire.Envelope{Final: true, Msg: wire.JobEndedNoted{Session: end.Session}})
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return func() []wire.JobEnded {
		mu.Lock()
		defer mu.Unlock()
		return append([]wire.JobEnded(nil), ends...)
	}
}

// brokerd tells gatewayd of each ended run it minted whose job delivers to
// Mattermost, once, with the job file's destination: gatewayd posts a
// job's reply only after that word (issue 23, finding 9).
func TestBrokerdTellsGatewaydOfEachEndedRunOnce(t *testing.T) {
	h := newHome(t, "[gateway]\nurl = \"https://mm.example/\"\nallow_users = [\"aaaaaaaaaaaaaaaaaaaaaaaaaa\"]\n", map[string]string{"tick-echo": tickGrant})
	h.write("etc/jobs/tick.toml", "every = \"1m\"\nprompt = \"say tick\"\ndeliver = \"mattermost:4xp9fdt77pncbef59f4k1qe83o\"\n")
	h.write("etc/jobs/quiet.toml", tickJob)
	ends := gatewayEnds(t, filepath.Join(h.dir, "run", "brokerd-gatewayd", "gateway.sock"))
	p := startInProcess(h, &fakeClock{t: t0})
	jobList := h.ask("loopd", wire.JobList{})
	if _, ok := jobList.(wire.JobListResult); !ok {
		t.Fatalf("job_list: %#v", jobList)
	}
	p.clock.Add(time.Minute)
	tick := mustStart(h, "tick", wire.TriggerSchedule, "job-tick-202612010701")
	quiet := mustStart(h, "quiet", wire.TriggerSchedule, "job-quiet-202612010701")
	if len(ends()) != 0 {
		t.Fatalf("gatewayd was told of a run still running: %+v", ends())
	}
	for _, s := range []wire.SessionID{tick.Session, tick.Session, quiet.Session, sessionID(t, "job-tick-202612010702")} {
		h.ask("loopd", wire.JobDone{Session: s, Outcome: wire.RunOK})
	}
	want := wire.JobEnded{Job: "tick", Session: tick.Session, Trigger: wire.TriggerSchedule, Scheduled: tick.Scheduled,
		To: "mattermost:4xp9fdt77pncbef59f4k1qe83o", Outcome: wire.RunOK}
	poll.Until(t, "gatewayd to be told", func() bool { return len(ends()) > 0 })
	if got := ends(); len(got) != 1 || got[0] != want {
		t.Errorf("gatewayd was told %+v, want only %+v", got, want)
	}
}

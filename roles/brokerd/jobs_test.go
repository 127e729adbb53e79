package brokerd

import (
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// A job that runs every minute, with a grant of its own, and what brokerd
// will and will not do for it (DESIGN.md section 13).

const (
	tickJob   = "every = \"1m\"\nprompt = \"say tick\"\ndeliver = \"log\"\n"
	tickGrant = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\njobs = [\"tick\"]\n[constraints]\npatterns = [\"echo .*\"]\n"
)

// t0 is when the tests' clocks start: 2026-12-01 07:00 UTC.
var t0 = time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)

func newJobHome(t *testing.T, jobs map[string]string) (*home, *inProcess) {
	t.Helper()
	h := newHome(t, "", map[string]string{"tick-echo": tickGrant})
	for id, text := range jobs {
		h.write("etc/jobs/"+id+".toml", text)
	}
	return h, startInProcess(h, &fakeClock{t: t0})
}

func jobStart(h *home, job string, trig wire.RunTrigger) wire.Message {
	h.t.Helper()
	return h.ask("loopd", wire.JobStart{Job: job, Trigger: trig})
}

func mustStart(h *home, job string, trig wire.RunTrigger, session string) wire.JobStarted {
	h.t.Helper()
	res := jobStart(h, job, trig)
	started, ok := res.(wire.JobStarted)
	if !ok || started.Session.String() != session {
		h.t.Fatalf("job_start %s %s: %#v, want session %s\n%s", job, trig, res, session, h.log)
	}
	return started
}

func mustRefuse(h *home, job string, trig wire.RunTrigger, reason string) {
	h.t.Helper()
	res := jobStart(h, job, trig)
	if r, ok := res.(wire.JobRefused); !ok || !strings.Contains(r.Reason, reason) {
		h.t.Fatalf("job_start %s %s: %#v, want refused %q", job, trig, res, reason)
	}
}

func echoIn(h *home, session string) wire.Message {
	h.t.Helper()
	return h.toolCall(session, "shell", `{"command":"echo hi"}`)
}

func TestJobDueEveryMinute(t *testing.T) {
	h, p := newJobHome(t, map[string]string{"tick": tickJob})
	list := h.ask("loopd", wire.JobList{}).(wire.JobListResult)
	if len(list.Jobs) != 1 || list.Jobs[0].Next == nil || list.Jobs[0].Next.Time() != t0.Add(time.Minute) {
		t.Fatalf("job_list: %#v, want tick next at 07:01", list)
	}
	p.clock.Add(30 * time.Second)
	mustRefuse(h, "tick", wire.TriggerSchedule, "not due: the next run is at 2026-12-01T07:01:00.000Z")
	mustRefuse(h, "nosuch", wire.TriggerSchedule, "no valid job file")
	p.clock.Add(32 * time.Second)
	run := mustStart(h, "tick", wire.TriggerSchedule, "job-tick-202612010701")
	if run.Deadline.Time() != t0.Add(62*time.Second+10*time.Minute) {
		t.Errorf("deadline %s, want the start and the default max_turn", run.Deadline)
	}
	mustRefuse(h, "tick", wire.TriggerSchedule, "still running")

	// The job's grant holds in the session brokerd minted, and nowhere else.
	if res, ok := echoIn(h, "job-tick-202612010701").(wire.Result); !ok || !strings.HasPrefix(res.Content, "hi\n") {
		t.Errorf("echo in the job's session: %#v\n%s", res, h.log)
	}
	for _, s := range []string{"chat-1", "job-tick-202612010702"} {
		if got := echoIn(h, s); got != (wire.Denied{Reason: wire.NoGrant}) {
			t.Errorf("echo in %s: %#v, want denied no_grant", s, got)
		}
	}
	tools := h.ask("loopd", wire.ToolList{Session: run.Session}).(wire.ToolListResult)
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "shell" {
		t.Errorf("tool_list in the job's session: %#v", tools)
	}
	if tools := h.ask("loopd", wire.ToolList{Session: sessionID(t, "chat-1")}).(wire.ToolListResult); len(tools.Tools) != 0 {
		t.Errorf("tool_list in a chat: %#v", tools)
	}

	// Once loopd says the run ended, the session is no longer the job's.
	if got := h.ask("loopd", wire.JobDone{Session: run.Session, Outcome: wire.RunOK}); got != (wire.JobRecorded{Session: run.Session, Outcome: wire.RunOK}) {
		t.Fatalf("job_done: %#v", got)
	}
	if got := echoIn(h, run.Session.String()); got != (wire.Denied{Reason: wire.NoGrant}) {
		t.Errorf("echo after the run ended: %#v, want denied no_grant", got)
	}
	mustRefuse(h, "tick", wire.TriggerSchedule, "already started for 2026-12-01T07:01:00.000Z")
	p.clock.Add(time.Minute)
	mustStart(h, "tick", wire.TriggerSchedule, "job-tick-202612010702")

	var starts []string
	for _, r := range h.auditRecords() {
		if r.Tool == "job_start" {
			starts = append(starts, r.Session.String())
			if _, ok := r.Decision.(wire.DecisionAllowed); !ok || !strings.Contains(r.Arguments, `"trigger":"schedule"`) {
				t.Errorf("audit record %#v", r)
			}
		}
	}
	if strings.Join(starts, " ") != "job-tick-202612010701 job-tick-202612010702" {
		t.Errorf("audited starts %v", starts)
	}
}

// A run is the job's only until its deadline, the end of max_turn.
func TestJobGrantEndsAtTheDeadline(t *testing.T) {
	h, p := newJobHome(t, map[string]string{"tick": tickJob + "max_turn = \"2m\"\n"})
	h.ask("loopd", wire.JobList{})
	p.clock.Add(time.Minute)
	run := mustStart(h, "tick", wire.TriggerSchedule, "job-tick-202612010701")
	p.clock.Add(2 * time.Minute)
	if got := echoIn(h, run.Session.String()); got != (wire.Denied{Reason: wire.NoGrant}) {
		t.Errorf("echo past the deadline: %#v, want denied no_grant", got)
	}
	list := h.ask("bxctl", wire.JobList{}).(wire.JobListResult)
	if last := list.Jobs[0].Last; last == nil || last.Outcome != wire.RunInterrupted {
		t.Errorf("last run %#v, want interrupted", last)
	}
	if got := h.ask("loopd", wire.JobDone{Session: run.Session, Outcome: wire.RunOK}); got != (wire.JobRecorded{Session: run.Session, Outcome: wire.RunInterrupted}) {
		t.Errorf("job_done after the deadline: %#v, want it kept interrupted", got)
	}
}

// The owner's `jobs run` is a trigger on the admin socket that loopd's
// job_start claims once; loopd cannot make one.
func TestJobOwnerTrigger(t *testing.T) {
	h, p := newJobHome(t, map[string]string{"daily": "schedule = \"0 7 * * *\"\ntime_zone = \"UTC\"\nprompt = \"p\"\ndeliver = \"log\"\n"})
	p.clock.Add(15*time.Minute + 3*time.Second + 400*time.Millisecond)
	mustRefuse(h, "daily", wire.TriggerOwner, "the owner has not asked")
	if _, _, err := h.call("loopd", wire.JobRunNow{Job: "daily"}); err == nil {
		t.Fatal("loopd's socket took job_run")
	}
	trig, ok := h.ask("bxctl", wire.JobRunNow{Job: "daily"}).(wire.JobTriggered)
	if !ok || trig.At.Time() != t0.Add(15*time.Minute+3*time.Second) {
		t.Fatalf("job_run: %#v", trig)
	}
	p.clock.Add(2 * time.Second)
	mustStart(h, "daily", wire.TriggerOwner, "job-daily-20261201071503")
	mustRefuse(h, "daily", wire.TriggerOwner, "still running")
	var found bool
	for _, r := range h.auditRecords() {
		if d, ok := r.Decision.(wire.DecisionApproved); ok && r.Tool == "job_start" && strings.HasPrefix(d.Approver, "local:") {
			found = r.Session.String() == "job-daily-20261201071503"
		}
	}
	if !found {
		t.Errorf("no audit record of the owner's run approved by local:<user>")
	}
}

// A run in progress when brokerd stops is interrupted, never started
// again for its time, and its session loses the job's grants.
func TestJobRestartInterruptsTheRun(t *testing.T) {
	h, p := newJobHome(t, map[string]string{"tick": tickJob})
	h.ask("loopd", wire.JobList{})
	p.clock.Add(time.Minute)
	run := mustStart(h, "tick", wire.TriggerSchedule, "job-tick-202612010701")
	p.restart()
	if got := echoIn(h, run.Session.String()); got != (wire.Denied{Reason: wire.NoGrant}) {
		t.Errorf("echo after a restart: %#v, want denied no_grant", got)
	}
	mustRefuse(h, "tick", wire.TriggerSchedule, "already started")
	show := h.ask("bxctl", wire.JobShow{Job: "tick"}).(wire.JobShowResult)
	if len(show.Runs) != 1 || show.Runs[0].Outcome != wire.RunInterrupted || show.Prompt != "say tick" {
		t.Errorf("job_show: %#v", show)
	}
}

// catch_up starts the latest missed run once; a job without it does not.
func TestJobCatchUp(t *testing.T) {
	h, p := newJobHome(t, map[string]string{
		"hourly": "every = \"1h\"\nprompt = \"p\"\ndeliver = \"log\"\ncatch_up = true\n",
		"tick":   tickJob,
	})
	h.ask("loopd", wire.JobList{})
	p.stop()
	p.clock.Add(3*time.Hour + 20*time.Minute)
	startInProcess(h, p.clock)
	mustRefuse(h, "hourly", wire.TriggerSchedule, "not due")
	mustRefuse(h, "tick", wire.TriggerCatchUp, "catch_up is not set")
	mustStart(h, "hourly", wire.TriggerCatchUp, "job-hourly-202612011000")
	h.ask("loopd", wire.JobDone{Session: sessionID(t, "job-hourly-202612011000"), Outcome: wire.RunOK})
	mustRefuse(h, "hourly", wire.TriggerCatchUp, "already started")
}

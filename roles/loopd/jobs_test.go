package loopd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// Scheduled jobs in loopd: a run brokerd minted runs the job's prompt as a
// fresh session's first message, with the job's grants, and its reply goes
// to gatewayd when the job delivers to Mattermost.

const jobNotesGrant = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\njobs = [\"notes\"]\n[constraints]\npaths = [\"notes\"]\n"

// call sends one request as client to listener and returns the answer.
func (e *env) call(client, listener string, m wire.Message) wire.Message {
	e.t.Helper()
	c, err := sock.Dial(e.socket(client, listener))
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, m, nil)
	if err != nil {
		e.t.Fatalf("%s to %s: %v\n%s", wire.KindOf(m), listener, err, e.logs)
	}
	return res
}

// runNow is `boxmaker jobs run ID`: the owner's trigger to brokerd, then
// job_run to loopd, whose answer it returns.
func (e *env) runNow(job string) wire.Message {
	e.t.Helper()
	if res, ok := e.call("bxctl", "brokerd", wire.JobRunNow{Job: job}).(wire.JobTriggered); !ok {
		e.t.Fatalf("brokerd's job_run: %#v", res)
	}
	return e.call("bxctl", "loopd", wire.JobRunNow{Job: job})
}

// subscribe takes job deliveries as gatewayd does, onto the returned channel.
func (e *env) subscribe() <-chan wire.JobDelivery {
	e.t.Helper()
	c, err := sock.Dial(e.socket("gatewayd", "loopd"))
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(chan wire.JobDelivery, 8)
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(func() { cancel(); c.Close() })
	go c.Call(ctx, wire.JobDeliveries{}, func(m wire.Message) error {
		out <- m.(wire.JobDelivery)
		return nil
	})
	return out
}

// lastRun waits until brokerd records the job's last run as ended.
func (e *env) lastRun(job string) wire.JobRun {
	e.t.Helper()
	var show wire.JobShowResult
	if !poll.Holds(30*time.Second, 20*time.Millisecond, func() bool {
		show = e.call("bxctl", "brokerd", wire.JobShow{Job: job}).(wire.JobShowResult)
		last := show.Job.Last
		return last != nil && last.Outcome != wire.RunRunning
	}) {
		e.t.Fatalf("job %s: no run ended: %#v\n%s", job, show, e.logs)
	}
	return *show.Job.Last
}

func TestJobRunsItsPromptWithItsGrant(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, grants: map[string]string{"asked": askGrant, "notes-job": jobNotesGrant}})
	e.write("etc/jobs/notes.toml", "every = \"1h\"\nprompt = \"read note todo.md\"\ndeliver = \"mattermost\"\n")
	deliveries := e.subscribe()

	if got := e.mustChat("", "read note todo.md").outcomes(); len(got) != 1 || got[0] != "denied" {
		t.Errorf("the job's grant in a chat: %v, want denied", got)
	}
	if res, ok := e.call("bxctl", "loopd", wire.JobRunNow{Job: "notes"}).(wire.JobRefused); !ok || !strings.Contains(res.Reason, "the owner has not asked") {
		t.Errorf("job_run to loopd alone: %#v, want refused by brokerd", res)
	}
	started, ok := e.runNow("notes").(wire.JobStarted)
	if !ok || !strings.HasPrefix(started.Session.String(), "job-notes-") || started.Trigger != wire.TriggerOwner {
		t.Fatalf("job_run: %#v\n%s", started, e.logs)
	}
	select {
	case d := <-deliveries:
		want := wire.JobDelivery{Job: "notes", Session: started.Session, Trigger: wire.TriggerOwner, Scheduled: started.Scheduled,
			To: "mattermost", Outcome: wire.RunOK, Content: "The tool said: buy milk\n"}
		if d != want {
			t.Errorf("delivery %#v\nwant %#v", d, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no delivery\n%s", e.logs)
	}
	if last := e.lastRun("notes"); last.Outcome != wire.RunOK || last.Session != started.Session {
		t.Errorf("last run %#v", last)
	}
	recs := e.readLog(started.Session.String(), 1)
	if kinds(recs) != "start user assistant result assistant" {
		t.Fatalf("session log: %s", kinds(recs))
	}
	if u := recs[1].(wire.User); u.Content != "read note todo.md" {
		t.Errorf("first message %q, want the job's prompt", u.Content)
	}
	if r := recs[3].(wire.ToolResult); r.Content != "buy milk\n" {
		t.Errorf("tool result %q, want the note", r.Content)
	}
}

// A chat may not take a name brokerd gives job runs.
func TestChatRefusesAJobSessionName(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	out := e.chat("job-notes-202612010700", "hello", nil)
	if out.err == nil || wire.CodeOf(out.err) != wire.BadMessage || !strings.Contains(out.err.Error(), "scheduled jobs") {
		t.Fatalf("chat in a job's name: %v", out.err)
	}
}

// blockSlow holds every model request whose prompt says "slow job" until
// the request ends, as a model that never answers would, and says on held
// that one came.
func blockSlow(held chan<- struct{}) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("slow job")) {
				select {
				case held <- struct{}{}:
				default:
				}
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// A run cut short by loopd stopping is recorded as interrupted, and a
// restarted loopd does not run it again.
func TestJobInterruptedByALoopdStop(t *testing.T) {
	held := make(chan struct{}, 1)
	e := newEnv(t, envOptions{script: toolScript, wrap: blockSlow(held)})
	e.write("etc/jobs/slow.toml", "every = \"1h\"\nprompt = \"slow job\"\ndeliver = \"log\"\n")
	started, ok := e.runNow("slow").(wire.JobStarted)
	if !ok {
		t.Fatalf("job_run: %#v\n%s", started, e.logs)
	}
	select {
	case <-held:
	case <-time.After(15 * time.Second):
		t.Fatalf("the run never asked the model\n%s", e.logs)
	}
	e.restartLoopd()
	if last := e.lastRun("slow"); last.Outcome != wire.RunInterrupted || last.Session != started.Session {
		t.Errorf("last run %#v, want the run interrupted", last)
	}
	if res, ok := e.call("bxctl", "loopd", wire.JobRunNow{Job: "slow"}).(wire.JobRefused); !ok {
		t.Errorf("job_run again without the owner: %#v, want refused", res)
	}
}

// queueDelivery leaves one job reply waiting for gatewayd: a run of a job
// that delivers to Mattermost, ended (ok or failed, both are delivered).
func (e *env) queueDelivery() {
	e.t.Helper()
	e.write("etc/jobs/queued.toml", "every = \"1h\"\nprompt = \"hello\"\ndeliver = \"mattermost\"\n")
	if _, ok := e.runNow("queued").(wire.JobStarted); !ok {
		e.t.Fatalf("no run of the job queued\n%s", e.logs)
	}
	e.lastRun("queued")
}

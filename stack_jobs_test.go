package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/mmdouble"
	"boxmaker/fixtures/poll"
)

// Scheduled jobs on a live stack (DESIGN.md section 13): `boxmaker up` as
// root, the owner's `jobs run`, the scheduler's own runs, a job's grant,
// and a run cut short by kill -9 of loopd.

// jobsModel reads the note it is told to.
const jobsModel = `
[[rule]]
match = '^read (?P<path>\S+)$'
[[rule.tool_calls]]
name = 'notes_read'
arguments = '{"path":"${path}"}'

[[rule]]
role = 'tool'
match = '(?s)^(?P<head>.*)$'
content = '(jobs model) the note says: ${head}'

[[rule]]
content = '(jobs model) nothing to do'
`

// holdingModel is a llama-server that holds every request whose prompt
// says "slow job" until the test ends, as a model that never answers
// would; slow counts those requests. It answers /props, which loopd asks
// first, and refuses anything else.
func holdingModel(t *testing.T, slow *atomic.Int32) string {
	t.Helper()
	done := make(chan struct{})
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/props":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"default_generation_settings":{"n_ctx":8192},"total_slots":4}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" && bytes.Contains(body, []byte("slow job")):
			slow.Add(1)
			select {
			case <-r.Context().Done():
			case <-done:
			}
		default:
			http.Error(w, "the holding model answers only slow jobs: "+r.Method+" "+r.URL.Path, http.StatusInternalServerError)
		}
	}))
	t.Cleanup(func() { close(done); model.Close() })
	return model.URL
}

// jobsGrant reads inbox/ only in runs of the job inbox.
const jobsGrant = "tool = \"notes_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"private\"\nuntrusted = false\njobs = [\"inbox\"]\n[constraints]\npaths = [\"inbox\"]\n"

// startJobsStack starts the stack with jobs, a grant and a note, answering
// with the jobs model, or with the holding model when slow is not nil.
func startJobsStack(t *testing.T, slow *atomic.Int32, jobs map[string]string) *stack {
	t.Helper()
	prepare := func(home string) {
		for rel, text := range map[string]string{"memory/inbox/today.md": "two letters from the bank\n"} {
			writeFile(t, filepath.Join(home, rel), text)
		}
		for id, text := range jobs {
			writeFile(t, filepath.Join(home, "etc", "jobs", id+".toml"), text)
		}
	}
	grants := map[string]string{"inbox-read": jobsGrant}
	if slow != nil {
		return startStackUpstream(t, holdingModel(t, slow), grants, prepare)
	}
	return startStackScript(t, jobsModel, grants, prepare)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

var startedIn = regexp.MustCompile(`started in session (job-[a-z0-9-]+)`)

// jobsRun is `boxmaker jobs run ID`, returning the session it started.
func (s *stack) jobsRun(id string) string {
	s.t.Helper()
	out := s.run("jobs", "run", id)
	m := startedIn.FindStringSubmatch(out)
	if m == nil {
		s.t.Fatalf("jobs run %s: %s", id, out)
	}
	return m[1]
}

// waitForJob polls `jobs show ID` until cond holds of its output.
func (s *stack) waitForJob(id, what string, wait time.Duration, cond func(string) bool) string {
	s.t.Helper()
	var out string
	if !poll.Holds(wait, 250*time.Millisecond, func() bool { out = s.run("jobs", "show", id); return cond(out) }) {
		s.t.Fatalf("job %s: %s did not happen:\n%s\nup's log:\n%s", id, what, out, s.log)
	}
	return out
}

// A job runs when the owner says and when it is due; its session log holds
// the prompt and the reply; its grant works there and not in a chat.
func TestStackJobRunsNowAndEveryMinute(t *testing.T) {
	s := startJobsStack(t, nil, map[string]string{"inbox": "every = \"1m\"\nprompt = \"read inbox/today.md\"\ndeliver = \"log\"\n"})
	session := s.jobsRun("inbox")
	if !regexp.MustCompile(`^job-inbox-\d{14}$`).MatchString(session) {
		t.Errorf("the owner's run is session %s, want job-inbox-<yyyymmddhhmmss>", session)
	}
	s.waitForJob("inbox", "the owner's run ending ok", time.Minute, func(out string) bool {
		return regexp.MustCompile(session+`\s+owner`).MatchString(out) && strings.Contains(out, "ok at")
	})
	shown := s.run("sessions", "show", session)
	if !strings.Contains(shown, "you: read inbox/today.md") || !strings.Contains(shown, "boxmaker: (jobs model) the note says: two letters from the bank") {
		t.Errorf("the run's session log:\n%s", shown)
	}
	if got := resultOf(t, s.say("chat", "read inbox/today.md")); got != "denied: no_grant" {
		t.Errorf("the job's grant in a chat: %s", got)
	}
	// The scheduler's own run: first seen when up started, due a minute on.
	out := s.waitForJob("inbox", "a scheduled run", 150*time.Second, func(out string) bool {
		return regexp.MustCompile(`job-inbox-\d{12}\s+schedule .* ok at`).MatchString(out)
	})
	scheduled := regexp.MustCompile(`(job-inbox-\d{12})\s+schedule`).FindStringSubmatch(out)[1]
	if shown := s.run("sessions", "show", scheduled); !strings.Contains(shown, "the note says: two letters from the bank") {
		t.Errorf("the scheduled run's session log:\n%s", shown)
	}
	if tail := s.run("audit", "tail", "-n", "50"); !strings.Contains(tail, "job_start") {
		t.Errorf("no job_start in the audit log:\n%s", tail)
	}
	s.run("audit", "verify")
}

// A run cut short by kill -9 of loopd is recorded as interrupted and is
// not run again by the restarted loopd.
func TestStackJobKilledWithLoopdIsNotRepeated(t *testing.T) {
	var slow atomic.Int32
	s := startJobsStack(t, &slow, map[string]string{"slow": "schedule = \"0 3 * * *\"\nprompt = \"slow job\"\ndeliver = \"log\"\ncatch_up = true\n"})
	session := s.jobsRun("slow")
	if !poll.Holds(30*time.Second, 50*time.Millisecond, func() bool { return slow.Load() != 0 }) {
		t.Fatalf("the run never asked the model\n%s", s.log)
	}
	pid := s.pidOf("loopd")
	syscall.Kill(pid, syscall.SIGKILL)
	out := s.waitForJob("slow", "the run recorded as interrupted", time.Minute, func(out string) bool {
		return strings.Contains(out, session) && strings.Contains(out, "interrupted")
	})
	if n := strings.Count(out, "job-slow-"); n != 1 {
		t.Errorf("%d runs, want the one:\n%s", n, out)
	}
	// up.json says running once the new loopd listens: it may trail the
	// interrupted record, which the new loopd writes as it starts.
	if !poll.Holds(30*time.Second, 50*time.Millisecond, func() bool { p := s.pidOf("loopd"); return p != 0 && p != pid }) {
		t.Fatalf("loopd was not restarted\n%s", s.log)
	}
	if n := slow.Load(); n != 1 {
		t.Errorf("the model was asked %d times for the run, want once", n)
	}
}

// A job's ask reaches the owner's Mattermost direct messages like any
// other; once approved there, the run's reply is posted there too, marked
// as the job's.
func TestStackJobAsksAndDeliversOnMattermost(t *testing.T) {
	mm := mmdouble.New()
	defer mm.Close()
	bot, token := mm.AddBot("boxmaker")
	alice := mm.AddUser("alice")
	channel := mm.AddChannel("town", bot.ID, alice.ID)
	dm := mm.DirectChannel(bot.ID, alice.ID)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "the weather is fine\n")
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	s := startStack(t, map[string]string{
		"fetch-weather": "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"public\"\njobs = [\"weather\"]\n[constraints]\nhosts = [\"http://" + host + "\"]\n",
	}, func(home string) {
		etc := filepath.Join(home, "etc")
		appendFile(t, filepath.Join(etc, "config.toml"), "\n[gateway]\nurl = \""+mm.URL+"\"\nchannels = [\""+channel+"\"]\nallow_users = [\""+alice.ID+"\"]\nedit_interval = \"100ms\"\n")
		writeFile(t, filepath.Join(etc, "secrets", "mattermost-bot"), token+"\n")
		writeFile(t, filepath.Join(etc, "jobs", "weather.toml"), "every = \"1h\"\nprompt = \"fetch "+page.URL+"/\"\ndeliver = \"mattermost\"\n")
	})
	s.jobsRun("weather")
	approval := waitForDM(t, s, mm, dm, bot.ID, "ap-")
	mm.React(alice.ID, approval.ID, "+1")
	reply := waitForDM(t, s, mm, dm, bot.ID, "**Job weather** (run by the owner at ")
	if !strings.Contains(reply.Message, "the weather is fine") {
		t.Errorf("the job's post: %q", reply.Message)
	}
}

// waitForDM waits for a post by user in the direct channel dm containing text.
func waitForDM(t *testing.T, s *stack, mm *mmdouble.Server, dm, user, text string) mmdouble.Post {
	t.Helper()
	var found mmdouble.Post
	if poll.Holds(60*time.Second, 50*time.Millisecond, func() bool {
		for _, p := range mm.PostsBy(user) {
			if p.ChannelID == dm && strings.Contains(p.Message, text) {
				found = p
				return true
			}
		}
		return false
	}) {
		return found
	}
	var seen []string
	for _, p := range mm.PostsBy(user) {
		seen = append(seen, p.ChannelID+": "+p.Message)
	}
	t.Fatalf("no post with %q in the direct channel:\n%s\nup's log:\n%s", text, strings.Join(seen, "\n"), s.log)
	return mmdouble.Post{}
}

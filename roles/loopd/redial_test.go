package loopd

import (
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"boxmaker/roles/internal/sock"
)

// TestRestartedBrokerdIsRedialled: a turn that comes while brokerd
// restarts waits for it, both for a tool call and for a new session's
// tool list, instead of failing at once.
func TestRestartedBrokerdIsRedialled(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := e.mustChat("", "hello").done.Session.String()
	bin := boxmakerBinary(t)
	for _, c := range []struct{ session, msg string }{
		{s, "read note todo.md"},
		{"", "a new session asks brokerd for its tools"},
	} {
		e.broker.Process.Kill()
		e.broker.Wait()
		type launched struct {
			proc *exec.Cmd
			err  error
		}
		back := make(chan launched, 1)
		time.AfterFunc(700*time.Millisecond, func() {
			proc, err := e.launchBroker(bin)
			back <- launched{proc, err}
		})
		out := e.chat(c.session, c.msg, nil)
		l := <-back
		if l.err != nil {
			t.Fatal(l.err)
		}
		e.broker = l.proc
		if out.err != nil {
			t.Fatalf("%q while brokerd restarted: %v\n%s", c.msg, out.err, e.logs)
		}
		if got := out.outcomes(); c.session != "" && !slices.Equal(got, []string{"result"}) {
			t.Errorf("%q while brokerd restarted: outcomes %v, want [result]\n%s", c.msg, got, e.logs)
		}
	}
}

// TestRestartedInferproxyIsRedialled: a turn that comes while nobody
// serves infer.sock yet waits for it instead of failing at once.
func TestRestartedInferproxyIsRedialled(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, noInfer: true})
	served := make(chan error, 1)
	time.AfterFunc(700*time.Millisecond, func() {
		ln, err := sock.Listen(e.socket("loopd", "inferproxy"))
		if err == nil {
			srv := &http.Server{Handler: e.double}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
		}
		served <- err
	})
	out := e.chat("", "hello", nil)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if out.err != nil || out.done.Content != "You said: hello" {
		t.Fatalf("a turn while inferproxy started: %v %+v\n%s", out.err, out.done, e.logs)
	}
}

package loopd

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"boxmaker/wire"
)

// TestTenTurnsKeepTheCache: replayed exactly, every request's prompt starts
// with everything the slot holds, so the server reuses all of it and loopd
// records no CacheLoss.
func TestTenTurnsKeepTheCache(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript})
	s := ""
	for i := range 10 {
		msg := fmt.Sprintf("turn %d: tell me something", i+1)
		if i%3 == 1 {
			msg = "read note todo.md" // a turn with a tool call and reasoning
		}
		s = e.mustChat(s, msg).done.Session.String()
	}
	if got := kinds(e.readLog(s, 1)); bytes.Contains([]byte(got), []byte("cache_loss")) {
		t.Fatalf("log: %s\n%s", got, e.logs)
	}
	reqs := e.chatRequests()
	if len(reqs) != 13 {
		t.Fatalf("%d requests, want 13 (10 turns, 3 of them with a tool call)", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1].Timings, reqs[i].Timings
		prevPrompt := prev.CacheN + prev.PromptN
		if cur.CacheN != prevPrompt+prev.PredictedN || cur.CacheN < prevPrompt {
			t.Errorf("request %d reused %d tokens; the previous prompt was %d and its reply %d", i+1, cur.CacheN, prevPrompt, prev.PredictedN)
		}
	}
}

// mutateNth changes one byte of the system prompt in the nth chat request,
// as a replay that re-serialised or edited history would.
func mutateNth(n int) func(http.Handler) http.Handler {
	var mu sync.Mutex
	count := 0
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/chat/completions" {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				count++
				if count == n {
					body = bytes.Replace(body, []byte("You are boxmaker"), []byte("You are Boxmaker"), 1)
				}
				mu.Unlock()
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestChangedPrefixIsCacheLoss(t *testing.T) {
	e := newEnv(t, envOptions{script: toolScript, wrap: mutateNth(3)})
	s := e.mustChat("", "one").done.Session.String()
	e.mustChat(s, "two")
	e.mustChat(s, "three")
	recs := e.readLog(s, 1)
	if got := kinds(recs); got != "start user assistant user assistant user cache_loss assistant" {
		t.Fatalf("log: %s", got)
	}
	reqs := e.chatRequests()
	want := wire.CacheLoss{
		Time:     recs[6].(wire.CacheLoss).Time,
		Expected: uint64(reqs[1].Timings.CacheN + reqs[1].Timings.PromptN),
		Got:      uint64(reqs[2].Timings.CacheN),
	}
	if recs[6] != want || want.Got >= want.Expected {
		t.Errorf("cache loss %+v, want %+v", recs[6], want)
	}
}

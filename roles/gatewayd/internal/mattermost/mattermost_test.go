package mattermost

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/mmdouble"
	"boxmaker/fixtures/poll"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 9, 17, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"retry-after seconds", http.Header{"Retry-After": {"3"}, "X-Ratelimit-Reset": {"9"}}, 3 * time.Second},
		{"reset only, seconds as the server sends", http.Header{"X-Ratelimit-Reset": {"2"}}, 2 * time.Second},
		{"reset as an epoch, as the docs say", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(now.Unix()+5, 10)}}, 5 * time.Second},
		{"retry-after as a date", http.Header{"Retry-After": {now.Add(4 * time.Second).Format(http.TimeFormat)}}, 4 * time.Second},
		{"zero", http.Header{"Retry-After": {"0"}}, 100 * time.Millisecond},
		{"nothing", http.Header{}, time.Second},
		{"garbage", http.Header{"Retry-After": {"soon"}}, time.Second},
	} {
		if got := RetryDelay(c.header, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func newDouble(t *testing.T) (*mmdouble.Server, *Client, mmdouble.User, string) {
	t.Helper()
	s := mmdouble.New()
	t.Cleanup(s.Close)
	bot, token := s.AddBot("bot")
	alice := s.AddUser("alice")
	channel := s.AddChannel("c", bot.ID, alice.ID)
	return s, New(s.URL, token, nil, nil), alice, channel
}

func TestCallsAndErrors(t *testing.T) {
	s, c, alice, channel := newDouble(t)
	ctx := t.Context()
	me, date, err := c.Me(ctx)
	if err != nil || me.Username != "bot" || !me.IsBot || time.Since(date) > time.Minute {
		t.Fatalf("Me: %+v %v %v", me, date, err)
	}
	root := s.Post(alice.ID, channel, "root")
	p, err := c.CreatePost(ctx, Post{ChannelID: channel, RootID: root.ID, Message: "reply", Props: map[string]any{"k": "v"}})
	if err != nil || p.RootID != root.ID || p.Prop("k") != "v" || !p.FromBot() {
		t.Fatalf("CreatePost: %+v %v", p, err)
	}
	if p, err = c.PatchPost(ctx, p.ID, "edited"); err != nil || p.Message != "edited" {
		t.Fatalf("PatchPost: %+v %v", p, err)
	}
	thread, err := c.Thread(ctx, p.ID)
	if err != nil || len(thread) != 2 || thread[0].ID != root.ID {
		t.Fatalf("Thread: %+v %v", thread, err)
	}
	_, err = c.GetPost(ctx, "nosuchpostnosuchpostnosuch")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 404 || ae.ID != "app.post.get.app_error" || !IsClientError(err) {
		t.Errorf("GetPost of nothing: %v", err)
	}
	if _, err := c.PatchPost(ctx, root.ID, "not mine"); !IsStatus(err, 403) {
		t.Errorf("patching another's post: %v", err)
	}
	bad := New(s.URL, "wrong", nil, nil)
	if _, _, err := bad.Me(ctx); !IsStatus(err, 401) {
		t.Errorf("a wrong token: %v", err)
	}
}

func TestRateLimitWaitIsCapped(t *testing.T) {
	s, c, _, _ := newDouble(t)
	c.MaxRateWait = 50 * time.Millisecond
	s.Force429(2, time.Hour)
	begin := time.Now()
	if _, _, err := c.Me(t.Context()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("took %v; the wait should be capped", took)
	}
}

// recorder is a Handler that keeps what it was given.
type recorder struct {
	mu     sync.Mutex
	events []Event
	lost   int
}

func (r *recorder) Event(_ context.Context, ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) Lost(context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost++
}

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events), r.lost
}

func TestStreamResumesOrSaysLost(t *testing.T) {
	s, c, alice, channel := newDouble(t)
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Stream{Client: c, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond}).Run(ctx, rec)
	}()
	defer func() { cancel(); <-done }()

	poll.Until(t, "connected", func() bool { return s.Sockets() == 1 })
	s.Post(alice.ID, channel, "one")
	poll.Until(t, "one event", func() bool { n, _ := rec.counts(); return n == 1 })
	s.DropSockets()
	s.Post(alice.ID, channel, "two") // while disconnected: replayed on resume
	poll.Until(t, "two events", func() bool { n, _ := rec.counts(); return n == 2 })
	if r := s.Resumes(); r.Lossless+r.Success != 1 || r.Failure != 0 {
		t.Errorf("resumes %+v", r)
	}
	s.ForgetSockets()
	poll.Until(t, "a lost stream is reported", func() bool { _, lost := rec.counts(); return lost == 1 })
	s.Post(alice.ID, channel, "three")
	poll.Until(t, "three events", func() bool { n, _ := rec.counts(); return n == 3 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, want := range []string{"one", "two", "three"} {
		if p, err := rec.events[i].Post(); err != nil || p.Message != want {
			t.Errorf("event %d: %+v %v; want %q", i, p, err, want)
		}
	}
}

func TestDeliverDropsRepeatsAndResumesGaps(t *testing.T) {
	s := &Stream{}
	rec := &recorder{}
	seq := func(n int64) *int64 { return &n }
	hello := Event{Event: "hello", Seq: seq(0), Data: map[string]jsontext.Value{"connection_id": jsontext.Value(`"a"`)}}
	steps := []struct {
		ev   Event
		err  error
		seen int
	}{
		{hello, nil, 0},
		{Event{Event: "posted", Seq: seq(1)}, nil, 1},
		{Event{Event: "posted", Seq: seq(1)}, nil, 1}, // a repeat
		{Event{Event: "posted", Seq: seq(3)}, errGap, 1},
		{Event{Event: "posted", Seq: seq(2)}, nil, 2},
	}
	for i, step := range steps {
		if err := s.deliver(t.Context(), step.ev, rec); err != step.err {
			t.Fatalf("step %d: %v, want %v", i, err, step.err)
		}
		if n, _ := rec.counts(); n != step.seen {
			t.Fatalf("step %d: %d delivered, want %d", i, n, step.seen)
		}
	}
}

// A post's integration marks, decoded from the JSON the server sends.
func TestIntegrationMarks(t *testing.T) {
	for _, c := range []struct {
		post string
		want string
	}{
		{`{"message":"hi","type":"","props":{}}`, ""},
		{`{"message":"hi"}`, ""},
		{`{"props":{"disable_group_highlight":true,"ai_generated_by":"x"}}`, ""},
		{`{"props":{"from_webhook":null,"from_plugin":false,"override_icon_url":""}}`, ""},
		{`{"props":{"from_webhook":"true"}}`, "props.from_webhook"},
		{`{"props":{"from_webhook":"false"}}`, "props.from_webhook"},
		{`{"props":{"from_plugin":true}}`, "props.from_plugin"},
		{`{"props":{"from_oauth_app":"true"}}`, "props.from_oauth_app"},
		{`{"props":{"from_bot":"true"}}`, "props.from_bot"},
		{`{"props":{"override_username":"ci","override_icon_url":"https://x/i.png","override_icon_emoji":"robot"}}`,
			"props.override_username, props.override_icon_url, props.override_icon_emoji"},
		{`{"props":{"webhook_display_name":"CI","attachments":[],"mm_blocks_actions":{}}}`,
			"props.webhook_display_name, props.attachments, props.mm_blocks_actions"},
		{`{"props":{"from_webhook":1}}`, "props.from_webhook"},
		{`{"type":"slack_attachment","props":{"from_webhook":"true"}}`, `props.from_webhook, type "slack_attachment"`},
		{`{"type":"system_join_channel"}`, `type "system_join_channel"`},
		{`{"type":"custom_\n"}`, `type "custom_\n"`},
	} {
		var p Post
		if err := json.Unmarshal([]byte(c.post), &p); err != nil {
			t.Fatalf("%s: %v", c.post, err)
		}
		if got := strings.Join(p.IntegrationMarks(), ", "); got != c.want {
			t.Errorf("%s: marks %q, want %q", c.post, got, c.want)
		}
	}
}

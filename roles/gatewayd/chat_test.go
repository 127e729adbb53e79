package gatewayd

import (
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/mmdouble"
	"boxmaker/fixtures/poll"
)

// replyIn waits for the bot's reply in a thread to reach its final text.
func (w *world) replyIn(t *testing.T, root, final string) mmdouble.Post {
	t.Helper()
	var got mmdouble.Post
	poll.Until(t, "the reply in thread "+root+" is final", func() bool {
		for _, p := range w.mm.Thread(root) {
			if p.UserID == w.bot.ID && strings.HasSuffix(p.Message, final+"\n```") {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

func TestMessageReachesLoopAndReplyIsStreamed(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoop(t, paths)
	start(t, w, paths)

	root := w.mm.Post(w.alice.ID, w.channel, "what does example.com say?")
	reply := w.replyIn(t, root.ID, "It says hello.")
	if reply.RootID != root.ID {
		t.Errorf("the reply is not in the thread: root_id %q", reply.RootID)
	}
	if !strings.Contains(reply.Message, "http_fetch") || !strings.Contains(reply.Message, "result: 1.2 kB, public") {
		t.Errorf("no tool line in the reply:\n%s", reply.Message)
	}
	if n := w.mm.Edits(reply.ID); n < 2 {
		t.Errorf("the reply was edited %d times; want it streamed (several edits)", n)
	}
	sends := loop.received()
	if len(sends) != 1 || sends[0].Session.String() != "mm-"+root.ID || sends[0].Content != root.Message {
		t.Fatalf("loopd got %+v", sends)
	}

	// A reply in the thread continues the session; a DM starts another.
	w.mm.Reply(w.bob.ID, root.ID, "and then?")
	poll.Until(t, "the thread's second message reaches loopd", func() bool { return len(loop.received()) == 2 })
	dm := w.mm.DirectChannel(w.alice.ID, w.bot.ID)
	direct := w.mm.Post(w.alice.ID, dm, "hello in private")
	w.replyIn(t, direct.ID, "It says hello.")
	sends = loop.received()
	if len(sends) != 3 || sends[1].Session.String() != "mm-"+root.ID || sends[2].Session.String() != "mm-"+direct.ID {
		t.Errorf("sessions: %+v", sends)
	}
}

func TestOthersBotsEditsAndSystemMessagesAreIgnored(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoop(t, paths)
	gw := start(t, w, paths)

	first := w.mm.Post(w.alice.ID, w.channel, "first")
	poll.Until(t, "the first message reaches loopd", func() bool { return len(loop.received()) == 1 })
	w.mm.Post(w.mallory.ID, w.channel, "I am not on the list")
	w.mm.Post(w.otherBot.ID, w.channel, "beep")
	w.mm.PostAs(w.alice.ID, mmdouble.Post{ChannelID: w.channel, Message: "impersonating a bot", Props: map[string]any{"from_bot": "true"}})
	w.mm.SystemPost(w.alice.ID, w.channel, "system_join_channel", "alice joined the channel.")
	w.mm.Edit(w.alice.ID, first.ID, "first, edited")
	w.mm.Post(w.alice.ID, w.quiet, "a channel gatewayd is not configured for")
	last := w.mm.Post(w.alice.ID, w.channel, "last")

	// Events are handled in order, so once the last message is through,
	// every one before it has been decided on.
	poll.Until(t, "the last message reaches loopd", func() bool { return len(loop.received()) == 2 })
	if got := loop.received()[1]; got.Content != "last" || got.Session.String() != "mm-"+last.ID {
		t.Errorf("loopd got %+v", got)
	}
	logs := gw.logs.String()
	for _, reason := range []string{": stranger", ": bot", ": system", ": edit", ": channel"} {
		if !strings.Contains(logs, reason+" (ignored so far:") {
			t.Errorf("no log line for an ignored %s post:\n%s", reason, logs)
		}
	}
	if !strings.Contains(logs, "bot 2") {
		t.Errorf("the two bot posts are not counted:\n%s", logs)
	}
}

// A message posted while the event stream is down reaches loopd once,
// whether the stream resumes or the message is read back over REST.
func TestMessagesSurviveALostStream(t *testing.T) {
	for _, c := range []struct {
		name       string
		down, back func(*mmdouble.Server)
	}{
		{"resumed", (*mmdouble.Server).DropSockets, func(*mmdouble.Server) {}},
		{"restarted", func(s *mmdouble.Server) { s.SetDown(true) }, func(s *mmdouble.Server) { s.SetDown(false) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			paths := home(t)
			loop := startLoop(t, paths)
			start(t, w, paths)
			w.mm.Post(w.alice.ID, w.channel, "before")
			poll.Until(t, "the first message reaches loopd", func() bool { return len(loop.received()) == 1 })
			c.down(w.mm)
			during := w.mm.Post(w.alice.ID, w.channel, "during")
			c.back(w.mm)
			w.replyIn(t, during.ID, "It says hello.")
			after := w.mm.Post(w.alice.ID, w.channel, "after")
			w.replyIn(t, after.ID, "It says hello.")
			var contents []string
			for _, s := range loop.received() {
				contents = append(contents, s.Content)
			}
			if strings.Join(contents, ",") != "before,during,after" {
				t.Errorf("loopd got %q; want each message once", contents)
			}
		})
	}
}

func TestLoopdDownIsSaid(t *testing.T) {
	w := newWorld(t)
	start(t, w, home(t)) // and no loopd
	root := w.mm.Post(w.alice.ID, w.channel, "anyone there?")
	poll.Until(t, "the reply says loopd is not reachable", func() bool {
		for _, p := range w.mm.Thread(root.ID) {
			if p.UserID == w.bot.ID && strings.Contains(p.Message, "_the turn failed:_ `loopd is not reachable") {
				return true
			}
		}
		return false
	})
}

func TestRateLimitIsWaitedOut(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	start(t, w, paths)

	w.mm.Force429(2, time.Second)
	root := w.mm.Post(w.alice.ID, w.channel, "hello")
	w.replyIn(t, root.ID, "It says hello.")
	var limited, after time.Time
	for _, r := range w.mm.Requests() {
		switch {
		case r.Status == 429:
			limited = r.At
		case !limited.IsZero() && after.IsZero() && r.Path == "/api/v4/posts" && r.Status == 201:
			after = r.At
		}
	}
	if limited.IsZero() || after.IsZero() {
		t.Fatalf("no 429 followed by a successful post: %+v", w.mm.Requests())
	}
	if gap := after.Sub(limited); gap < 900*time.Millisecond {
		t.Errorf("retried %v after the 429; Retry-After said 1s", gap)
	}
}

func TestNothingButAMessageIsForwarded(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"approve", true}, {"Deny.", true}, {"@boxmaker approve abc-1", true}, {"APPROVE!", true},
		{"approve this please now", false}, {"I approve", false}, {"approved", false}, {"", false},
	} {
		if _, _, ok := parseAnswer(c.in); ok != c.want {
			t.Errorf("parseAnswer(%q) = %v, want %v", c.in, ok, c.want)
		}
	}
}

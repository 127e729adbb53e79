package gatewayd

import (
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/wire"
)

// session starts a thread by alice and returns its session name, after
// its turn is done, so that the turn's posts do not mix with the test's.
func (w *world) session(t *testing.T) (root, session string) {
	t.Helper()
	p := w.mm.Post(w.alice.ID, w.channel, "fetch example.com")
	w.replyIn(t, p.ID, "It says hello.")
	return p.ID, "mm-" + p.ID
}

func TestApprovalByReaction(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoop(t, paths)
	start(t, w, paths)
	root, session := w.session(t)
	other := w.mm.Post(w.alice.ID, w.quiet, "another post")

	o := newBroker(t, paths).offer(request(t, "appr-1", session, time.Now().Add(time.Minute)))
	post := w.approvalPost(t, "appr-1")
	if post.RootID != root || post.ChannelID != w.channel {
		t.Errorf("approval posted in channel %s thread %q; want the session's thread %s", post.ChannelID, post.RootID, root)
	}
	for _, want := range []string{"`http_fetch`", "`fetch-ask`", "`private`", "appr-1", "````text\n{\"url\":\"https://example.com/```\\n\"}\n````", ":+1:"} {
		if !strings.Contains(post.Message, want) {
			t.Errorf("the approval post lacks %q:\n%s", want, post.Message)
		}
	}

	// None of these may decide: a stranger's reaction on the post, an
	// allowlisted reaction on another post, a reply in another thread.
	w.mm.React(w.mallory.ID, post.ID, "+1")
	w.mm.React(w.otherBot.ID, post.ID, "+1")
	w.mm.React(w.alice.ID, other.ID, "+1")
	w.mm.React(w.alice.ID, root, "+1")
	elsewhere := w.mm.Post(w.alice.ID, w.channel, "a new thread")
	w.mm.Reply(w.alice.ID, elsewhere.ID, "approve")
	poll.Until(t, "the stray answer is told nothing waits", func() bool {
		_, ok := w.mm.FindPost(w.bot.ID, "No approval waits for an answer in this thread")
		return ok
	})
	o.undecided(t)

	w.mm.React(w.bob.ID, post.ID, "-1")
	d := o.decision(t)
	want := wire.ApprovalDecision{Approval: "appr-1", Approve: false, Approver: "mm:" + w.bob.ID, Post: post.ID}
	if d != want {
		t.Fatalf("decision %+v, want %+v", d, want)
	}
	poll.Until(t, "the post says who denied it", func() bool {
		p, _ := w.mm.Get(post.ID)
		return strings.Contains(p.Message, "**Denied** by mm:"+w.bob.ID)
	})
	w.mm.React(w.alice.ID, post.ID, "+1")
	poll.Until(t, "a late answer is told it was decided", func() bool {
		_, ok := w.mm.FindPost(w.bot.ID, "already decided: **Denied**")
		return ok
	})
	for _, send := range loop.received() {
		if send.Content == "approve" {
			t.Errorf("an answer reached loopd: %+v", send)
		}
	}
}

// brokerd offering an approval again on a new connection (it reconnected)
// takes over; the old connection closing then withdraws nothing.
func TestReofferTakesOver(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	gw := start(t, w, paths)
	b := newBroker(t, paths)
	req := request(t, "appr-again", "chat-5", time.Now().Add(time.Minute))
	old := b.offer(req)
	post := w.approvalPost(t, "appr-again")
	again := b.offer(req)
	poll.Until(t, "the second offer is held", func() bool { return strings.Contains(gw.logs.String(), "appr-again: offered again") })
	old.cancel()
	<-old.result
	// gatewayd logs how it handled the old connection's end either way, so
	// the check below cannot run before that has happened.
	poll.Until(t, "the old connection's end is handled", func() bool {
		logs := gw.logs.String()
		return strings.Contains(logs, "appr-again: "+replacedRequestEnded) || strings.Contains(logs, "appr-again: withdrawn")
	})
	if strings.Contains(gw.logs.String(), "appr-again: withdrawn") {
		t.Fatalf("the old connection closing withdrew it:\n%s", gw.logs)
	}
	if p, _ := w.mm.Get(post.ID); !strings.Contains(p.Message, "React with") {
		t.Fatalf("the old connection closing withdrew it:\n%s", p.Message)
	}
	w.mm.React(w.alice.ID, post.ID, "+1")
	if d := again.decision(t); !d.Approve || d.Post != post.ID {
		t.Fatalf("decision %+v", d)
	}
}

func TestApprovalByReplyInDirectMessage(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoop(t, paths)
	start(t, w, paths)

	// A session gatewayd did not make (bxctl chat) is asked in the owner's DM.
	o := newBroker(t, paths).offer(request(t, "appr-dm", "chat-7", time.Now().Add(time.Minute)))
	post := w.approvalPost(t, "appr-dm")
	if dm := w.mm.DirectChannel(w.alice.ID, w.bot.ID); post.ChannelID != dm || post.RootID != "" {
		t.Fatalf("approval posted in %s thread %q; want a new thread in the owner's DM %s", post.ChannelID, post.RootID, dm)
	}
	w.mm.Reply(w.alice.ID, post.ID, "approve appr-dm")
	if d := o.decision(t); !d.Approve || d.Approver != "mm:"+w.alice.ID || d.Post != post.ID {
		t.Fatalf("decision %+v", d)
	}
	if got := loop.received(); len(got) != 0 {
		t.Errorf("an answer reached loopd: %+v", got)
	}
}

func TestRacingAnswersDecideOnce(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	start(t, w, paths)
	root, session := w.session(t)

	o := newBroker(t, paths).offer(request(t, "appr-race", session, time.Now().Add(time.Minute)))
	post := w.approvalPost(t, "appr-race")
	var wg sync.WaitGroup
	wg.Go(func() { w.mm.React(w.alice.ID, post.ID, "+1") })
	wg.Go(func() { w.mm.Reply(w.bob.ID, root, "deny") })
	wg.Wait()
	d := o.decision(t)
	winner, loser := "mm:"+w.alice.ID, "mm:"+w.bob.ID
	if !d.Approve {
		winner, loser = loser, winner
	}
	if d.Approver != winner {
		t.Fatalf("decision %+v", d)
	}
	poll.Until(t, "the second answer is told the first won", func() bool {
		_, ok := w.mm.FindPost(w.bot.ID, "already decided")
		return ok
	})
	poll.Until(t, "the post names the winner", func() bool {
		p, _ := w.mm.Get(post.ID)
		return strings.Contains(p.Message, winner)
	})
	if p, _ := w.mm.Get(post.ID); strings.Contains(p.Message, loser) {
		t.Errorf("the post names the loser:\n%s", p.Message)
	}
}

// Many answers at once, straight at the registry: exactly one decides.
func TestConcurrentDecideOnce(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	g, err := newGateway(Options{Paths: paths, Gateway: w.gatewayConfig(), Token: w.token})
	if err != nil {
		t.Fatal(err)
	}
	a := &approval{req: request(t, "x", "chat-1", time.Now().Add(time.Minute)), waiter: make(chan wire.ApprovalDecision, 1)}
	ch := a.waiter
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { g.approvals.decide(t.Context(), a, i%2 == 0, "u", "test") })
	}
	wg.Wait()
	if len(ch) != 1 || a.state != stateDecided {
		t.Fatalf("%d decisions sent, state %v", len(ch), a.state)
	}
}

func TestWithdrawnAndExpiredApprovalsSaySo(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	start(t, w, paths)
	_, session := w.session(t)
	b := newBroker(t, paths)

	o := b.offer(request(t, "appr-gone", session, time.Now().Add(time.Minute)))
	gone := w.approvalPost(t, "appr-gone")
	o.cancel() // brokerd closes: answered elsewhere
	b.offer(request(t, "appr-late", session, time.Now().Add(700*time.Millisecond)))
	late := w.approvalPost(t, "appr-late")
	for id, want := range map[string]string{gone.ID: "**No longer pending**", late.ID: "**Expired** at"} {
		poll.Until(t, "post "+id+" says "+want, func() bool {
			p, _ := w.mm.Get(id)
			return strings.Contains(p.Message, want) && !strings.Contains(p.Message, "React with")
		})
	}
	w.mm.React(w.alice.ID, late.ID, "+1")
	poll.Until(t, "an answer after the expiry is told so", func() bool {
		_, ok := w.mm.FindPost(w.bot.ID, "already decided: **Expired**")
		return ok
	})
}

func TestApprovalSurvivesDroppedSocket(t *testing.T) {
	for _, c := range []struct {
		name string
		drop func(w *world)
	}{
		// The reaction is queued for the dropped socket, or comes live
		// after the resume: either way the stream resumed.
		{"resumed", func(w *world) { w.mm.DropSockets() }},
		// A restart while the reaction is made: the resume fails and the
		// reaction is read back over REST.
		{"lost and read back", func(w *world) { w.mm.SetDown(true) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			paths := home(t)
			startLoop(t, paths)
			start(t, w, paths)
			o := newBroker(t, paths).offer(request(t, "appr-drop", "chat-2", time.Now().Add(time.Minute)))
			post := w.approvalPost(t, "appr-drop")
			c.drop(w)
			w.mm.React(w.alice.ID, post.ID, "+1") // while the bot is not connected
			w.mm.SetDown(false)
			if d := o.decision(t); !d.Approve || d.Approver != "mm:"+w.alice.ID {
				t.Fatalf("decision %+v", d)
			}
			poll.Until(t, "gatewayd reconnects", func() bool { return w.mm.Sockets() == 1 })
			if r := w.mm.Resumes(); c.name == "resumed" && r.Success+r.Lossless == 0 {
				t.Errorf("no resume: %+v", r)
			}
		})
	}
}

func TestApprovalWaitsOutAnOutage(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	gw := start(t, w, paths)
	w.mm.SetDown(true)
	o := newBroker(t, paths).offer(request(t, "appr-out", "chat-3", time.Now().Add(time.Minute)))
	poll.Until(t, "gatewayd fails to post", func() bool { return strings.Contains(gw.logs.String(), "approval appr-out: not posted yet") })
	w.mm.SetDown(false)
	post := w.approvalPost(t, "appr-out")
	w.mm.React(w.alice.ID, post.ID, "+1")
	if d := o.decision(t); !d.Approve {
		t.Fatalf("decision %+v", d)
	}
}

// A restarted gatewayd finds its earlier post when brokerd offers the
// approval again, and takes the answer given while it was down.
func TestRestartedGatewayFindsItsPost(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	startLoop(t, paths)
	first := start(t, w, paths)
	b := newBroker(t, paths)
	req := request(t, "appr-restart", "chat-4", time.Now().Add(time.Minute))
	o := b.offer(req)
	post := w.approvalPost(t, "appr-restart")
	first.stop()
	if r := <-o.result; r.err == nil {
		t.Fatalf("the request outlived gatewayd: %+v", r.decision)
	}
	w.mm.React(w.alice.ID, post.ID, "-1")
	poll.Until(t, "the first gatewayd's socket is gone", func() bool { return w.mm.Sockets() == 0 })

	start(t, w, paths)
	if d := b.offer(req).decision(t); d.Approve || d.Post != post.ID || d.Approver != "mm:"+w.alice.ID {
		t.Fatalf("decision %+v", d)
	}
	n := 0
	for _, p := range w.mm.PostsBy(w.bot.ID) {
		if p.Props[approvalProp] == "appr-restart" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d approval posts; want the first one reused", n)
	}
}

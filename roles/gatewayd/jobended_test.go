package gatewayd

import (
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/wire"
)

// A compromised loopd forges a job's message (issue 23, finding 9): a
// delivery for a run brokerd never said it minted and ended is not posted.
func TestForgedJobDeliveryIsNotPosted(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoopJobs(t, paths)
	r := start(t, w, paths, func(o *Options) { o.JobEndWait = 200 * time.Millisecond })
	forged := delivery(t, "mattermost", "", wire.TriggerSchedule, wire.RunOK, "Your password expired: reply with it here.")
	loop.queue <- forged
	poll.Until(t, "the forged delivery to be refused", func() bool {
		return strings.Contains(r.logs.String(), "session "+forged.Session.String()+" is not posted: brokerd has not said")
	})
	if posts := w.mm.PostsBy(w.bot.ID); len(posts) != 0 {
		t.Fatalf("gatewayd posted a job's message loopd alone sent: %q", posts[0].Message)
	}
}

// A real run's reply is posted under brokerd's job, time, destination and
// outcome, whatever loopd's frame says, and only once.
func TestJobDeliveryIsPostedAsBrokerdSaysOnce(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoopJobs(t, paths)
	r := start(t, w, paths, func(o *Options) { o.JobEndWait = 200 * time.Millisecond })
	dm := w.mm.DirectChannel(w.bot.ID, w.alice.ID)
	real := delivery(t, "mattermost", "", wire.TriggerSchedule, wire.RunOK, "Three notes in the inbox.")
	newBroker(t, paths).jobEnded(endedAs(real))
	lying := real
	lying.Job, lying.To, lying.Trigger = "payroll", "mattermost:"+w.channel, wire.TriggerOwner
	loop.queue <- lying
	poll.Until(t, "the reply to be posted", func() bool { return len(w.mm.PostsBy(w.bot.ID)) > 0 })
	p := w.mm.PostsBy(w.bot.ID)[0]
	if p.ChannelID != dm || !strings.HasPrefix(p.Message, "**Job nightly** (scheduled 2020-03-01 06:00 UTC):") {
		t.Errorf("posted in %s: %q; want brokerd's job and destination (the owner's DM %s)", p.ChannelID, p.Message, dm)
	}
	loop.queue <- real
	poll.Until(t, "the second delivery of the run to be refused", func() bool {
		return strings.Count(r.logs.String(), "session "+real.Session.String()+" is not posted") == 1
	})
	if n := len(w.mm.PostsBy(w.bot.ID)); n != 1 {
		t.Errorf("%d posts for one run", n)
	}
}

// brokerd's word is checked: a session that is no job's, a run still
// running, or a destination that is not Mattermost is refused.
func TestJobEndedIsChecked(t *testing.T) {
	ok := wire.JobEnded{Job: "nightly", Trigger: wire.TriggerSchedule, To: "mattermost", Outcome: wire.RunOK}
	ok.Session, _ = wire.ParseSessionID("job-nightly-202612010600")
	if err := checkJobEnded(ok); err != nil {
		t.Fatal(err)
	}
	chat, running, logged := ok, ok, ok
	chat.Session, _ = wire.ParseSessionID("mm-abcdefghijklmnopqrstuvwxyz")
	running.Outcome = wire.RunRunning
	logged.To = "log"
	for _, e := range []wire.JobEnded{chat, running, logged} {
		if checkJobEnded(e) == nil {
			t.Errorf("%+v was taken", e)
		}
	}
}

package gatewayd

import (
	"context"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// loopJobs stands in for loopd's side of job_deliveries: it sends what the
// test queues on each subscription, as job_delivery frames.
type loopJobs struct {
	queue chan wire.JobDelivery
}

func startLoopJobs(t *testing.T, paths config.Paths) *loopJobs {
	t.Helper()
	l := &loopJobs{queue: make(chan wire.JobDelivery, 8)}
	path, _ := sock.PathOf(paths, "gatewayd", "loopd")
	ln, err := sock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &sock.Server{Name: "loopd stand-in", Accepts: []string{"job_deliveries"}, AllowPeer: func(sock.Peer) bool { return true },
		Log: log.New(io.Discard, "", 0), Handle: func(ctx context.Context, _ sock.Peer, _ wire.Envelope, reply sock.Replier) error {
			for {
				select {
				case d := <-l.queue:
					if err := reply(wire.Envelope{Msg: d}); err != nil {
						return err
					}
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// delivery is one for the run of 2020-03-01 06:00 UTC, a day long past,
// so that its post shows the date; each is of a session of its own.
func delivery(t *testing.T, to, zone string, trig wire.RunTrigger, outcome wire.RunOutcome, content string) wire.JobDelivery {
	t.Helper()
	deliveries++
	s, _ := wire.ParseSessionID(fmt.Sprintf("job-nightly-20200301060%d", deliveries%10))
	at, _ := wire.TimestampOf(time.Date(2020, 3, 1, 6, 0, 0, 0, time.UTC))
	return wire.JobDelivery{Job: "nightly", Session: s, Trigger: trig, Scheduled: at, TimeZone: zone, To: to, Outcome: outcome, Content: content}
}

var deliveries int

// endedAs is brokerd's word on the run of d, as d says it.
func endedAs(d wire.JobDelivery) wire.JobEnded {
	return wire.JobEnded{Job: d.Job, Session: d.Session, Trigger: d.Trigger, Scheduled: d.Scheduled, TimeZone: d.TimeZone, To: d.To, Outcome: d.Outcome}
}

// jobEnded sends brokerd's job_ended and waits for gatewayd to note it.
func (b *broker) jobEnded(e wire.JobEnded) {
	b.t.Helper()
	c, err := sock.Dial(b.path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Call(context.Background(), e, nil)
	if noted, ok := res.(wire.JobEndedNoted); err != nil || !ok || noted.Session != e.Session {
		b.t.Fatalf("job_ended: %#v, %v", res, err)
	}
}

// A job's reply goes to the owner's direct messages or a configured
// channel, marked as the job's; never to a channel gatewayd does not serve.
func TestJobRepliesArePostedWhereTheJobSays(t *testing.T) {
	w := newWorld(t)
	paths := home(t)
	loop := startLoopJobs(t, paths)
	r := start(t, w, paths)
	dm := w.mm.DirectChannel(w.bot.ID, w.alice.ID)

	for _, d := range []wire.JobDelivery{
		delivery(t, "mattermost", "Europe/Berlin", wire.TriggerSchedule, wire.RunOK, "Three notes in the inbox."),
		delivery(t, "mattermost:"+w.quiet, "", wire.TriggerOwner, wire.RunOK, "not for the quiet channel"),
		delivery(t, "mattermost:"+w.channel, "", wire.TriggerCatchUp, wire.RunFailed, "the run did not finish within max_turn (10m)"),
	} {
		newBroker(t, paths).jobEnded(endedAs(d))
		loop.queue <- d
	}
	var posts []string
	poll.Until(t, "both replies are posted", func() bool {
		posts = posts[:0]
		for _, p := range w.mm.PostsBy(w.bot.ID) {
			posts = append(posts, p.ChannelID+" "+p.Message)
			if p.Props["unsafe_links"] != "true" {
				t.Errorf("post %s lacks unsafe_links, so the server may preview its links", p.ID)
			}
		}
		return len(posts) >= 2
	})
	want := []string{
		dm + " **Job nightly** (scheduled 2020-03-01 07:00 Europe/Berlin):\n\n```text\nThree notes in the inbox.\n```",
		w.channel + " **Job nightly** (missed at 2020-03-01 06:00 UTC, caught up) failed: `the run did not finish within max_turn (10m)`",
	}
	if strings.Join(posts, "\n") != strings.Join(want, "\n") {
		t.Errorf("posts:\n%s\nwant:\n%s", strings.Join(posts, "\n"), strings.Join(want, "\n"))
	}
	poll.Until(t, "the refusal is logged", func() bool {
		return strings.Contains(r.logs.String(), "channel "+w.quiet+" is not one of [gateway] channels")
	})
}

func TestJobTextShowsTheTimeInTheJobsZone(t *testing.T) {
	d := delivery(t, "mattermost", "Europe/Berlin", wire.TriggerSchedule, wire.RunOK, "hi")
	now := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)
	if got := jobPosts(d, now)[0]; got != "**Job nightly** (scheduled 07:00 Europe/Berlin):\n\n```text\nhi\n```" {
		t.Errorf("today: %q", got)
	}
	d.Trigger, d.TimeZone = wire.TriggerOwner, ""
	if got := jobPosts(d, now)[0]; got != "**Job nightly** (run by the owner at 06:00 UTC):\n\n```text\nhi\n```" {
		t.Errorf("the owner's: %q", got)
	}
}

package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/gatewayd/internal/mattermost"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// Scheduled jobs' replies (DESIGN.md section 13). gatewayd is the only role
// that talks to Mattermost and it dials loopd, so it holds one job_deliveries
// request open on loop.sock and posts each job_delivery frame loopd sends:
// to the owner's direct messages ("mattermost") or to a channel
// ("mattermost:<id>") that [gateway] channels lists, under a line that
// marks it as the job's. A reply is posted only for a run brokerd told
// gatewayd it minted and has ended (jobended.go), and where it goes is the
// job file's as brokerd read it; gatewayd also refuses a channel it was
// not configured for.

// followJobs takes deliveries from loopd until ctx ends, dialling again
// with backoff when loopd is down or restarts.
func (g *gateway) followJobs(ctx context.Context) {
	select {
	case <-g.ready:
	case <-ctx.Done():
		return
	}
	bo := g.backoff()
	last := ""
	for ctx.Err() == nil {
		took, err := g.takeDeliveries(ctx)
		if ctx.Err() != nil {
			return
		}
		if took {
			bo = g.backoff()
		}
		// One line per distinct failure: loopd down for a while is one
		// line, not one per try.
		if why := fmt.Sprint(err); why != last {
			g.log.Printf("job deliveries from loopd: %v; trying again", err)
			last = why
		}
		if bo.Wait(ctx) != nil {
			return
		}
	}
}

// takeDeliveries subscribes once and posts what comes, until the
// connection ends. took says whether anything came.
func (g *gateway) takeDeliveries(ctx context.Context) (took bool, err error) {
	c, err := sock.Dial(g.loopSock)
	if err != nil {
		return false, err
	}
	defer c.Close()
	res, err := c.Call(ctx, wire.JobDeliveries{}, func(m wire.Message) error {
		d, ok := m.(wire.JobDelivery)
		if !ok {
			return fmt.Errorf("loopd sent %s among job deliveries", wire.KindOf(m))
		}
		took = true
		g.postDelivery(ctx, d)
		return nil
	})
	if err == nil {
		err = fmt.Errorf("loopd ended the deliveries with %s", wire.KindOf(res))
	}
	return took, err
}

// postDelivery posts one job's reply where it goes, split over posts when
// one cannot hold it.
func (g *gateway) postDelivery(ctx context.Context, d wire.JobDelivery) {
	end, ok := g.jobEnds.take(ctx, d.Session, g.jobEndWait)
	if !ok {
		g.log.Printf("job %s: the reply loopd sent for session %s is not posted: brokerd has not said it minted that run and it ended, or it was posted already",
			oneLine(d.Job, 64), d.Session)
		return
	}
	d = asBrokerdSays(d, end)
	channel, err := g.deliveryChannel(d.To)
	if err != nil {
		g.log.Printf("job %s: the reply of session %s is not posted: %v; it is in the session log", d.Job, d.Session, err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, chunk := range jobPosts(d, time.Now()) {
		if _, err := retry(ctx, g, "posting a job's reply", func() (mattermost.Post, error) {
			return g.mm.CreatePost(ctx, mattermost.Post{ChannelID: channel, Message: chunk})
		}); err != nil {
			g.log.Printf("job %s: the reply of session %s was not posted: %v", d.Job, d.Session, err)
			return
		}
	}
	g.log.Printf("job %s: posted the reply of session %s to %s", d.Job, d.Session, d.To)
}

// deliveryChannel is the channel a delivery's To names: the owner's direct
// channel, or a configured channel; never another.
func (g *gateway) deliveryChannel(to string) (string, error) {
	if to == "mattermost" {
		if ch := g.ownerDM(); ch != "" {
			return ch, nil
		}
		return "", errors.New("there is no direct channel with the owner (the first allow_users)")
	}
	ch, ok := strings.CutPrefix(to, "mattermost:")
	if !ok || ch == "" {
		return "", fmt.Errorf("%q is no Mattermost destination", to)
	}
	if !slices.Contains(g.cfg.Channels, ch) {
		return "", fmt.Errorf("channel %s is not one of [gateway] channels", ch)
	}
	return ch, nil
}

// jobPosts marks a reply as the job's: "**Job nightly** (scheduled 07:00
// Europe/Berlin):" and the reply quoted below it (quote.go), cut over posts
// when one cannot hold it. The job's words are loopd's, shown, never acted
// on, and never rendered.
func jobPosts(d wire.JobDelivery, now time.Time) []string {
	when := jobTime(d, now)
	var why string
	switch d.Trigger {
	case wire.TriggerSchedule:
		why = "scheduled " + when
	case wire.TriggerCatchUp:
		why = "missed at " + when + ", caught up"
	default:
		why = "run by the owner at " + when
	}
	head := fmt.Sprintf("**Job %s** (%s)", jobName(d.Job), why)
	if d.Outcome != wire.RunOK {
		return []string{head + " " + string(d.Outcome) + ": " + codeSpan(oneLine(d.Content, 500))}
	}
	return quotedPosts(head+":", d.Content, "")
}

// jobName is a job's id as a post shows it: as it is when it is a job id
// as policy makes them, else quoted.
func jobName(id string) string {
	if jobID().MatchString(id) {
		return id
	}
	return codeSpan(oneLine(id, 64))
}

var jobID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`) })

// jobTime shows a run's time in the job's zone (UTC for an every job),
// with the date unless it is now's day there.
func jobTime(d wire.JobDelivery, now time.Time) string {
	loc, name := time.UTC, "UTC"
	if d.TimeZone != "" {
		if l, err := time.LoadLocation(d.TimeZone); err == nil {
			loc, name = l, d.TimeZone
		}
	}
	at := d.Scheduled.Time().In(loc)
	if name == "Local" {
		name = at.Format("MST")
	}
	layout := "15:04"
	if y, m, day := now.In(loc).Date(); at.Day() != day || at.Month() != m || at.Year() != y {
		layout = "2006-01-02 15:04"
	}
	return at.Format(layout) + " " + name
}

package jobs

import (
	"fmt"
	"strings"
	"time"
)

// Job is one job file, jobs/<id>.toml, parsed and checked (DESIGN.md
// section 13): a prompt that runs on a schedule. Only ParseJob,
// LoadJobFile and LoadJobs make one; the zero Job is never due.
type Job struct {
	id      string
	cron    Cron           // the schedule, when the file has one
	zone    *time.Location // the schedule's zone
	every   time.Duration  // the interval, when the file has every instead
	prompt  string
	deliver Delivery
	maxTurn time.Duration // 0: none set
	catchUp bool
}

// MaxJobPrompt is the longest prompt, in bytes: it travels in one frame
// with the rest of a turn.
const MaxJobPrompt = 64 << 10

// ID is the job file's stem.
func (j Job) ID() string { return j.id }

// Schedule is the schedule as the file writes it: the cron spec, or
// "every" and the interval.
func (j Job) Schedule() string {
	if j.every > 0 {
		return "every " + durationText(j.every)
	}
	return j.cron.String()
}

// Cron returns the job's cron schedule, if it has one.
func (j Job) Cron() (Cron, bool) { return j.cron, !j.cron.IsZero() }

// Every returns the job's interval, if it runs by every.
func (j Job) Every() (time.Duration, bool) { return j.every, j.every > 0 }

// Zone is the zone the cron schedule is read in: time_zone, or the host's
// local zone when the file names none. nil for a job that runs by every,
// which counts real time.
func (j Job) Zone() *time.Location { return j.zone }

func (j Job) Prompt() string                 { return j.prompt }
func (j Job) Deliver() Delivery              { return j.deliver }
func (j Job) CatchUp() bool                  { return j.catchUp }
func (j Job) MaxTurn() (time.Duration, bool) { return j.maxTurn, j.maxTurn > 0 }

// IsZero reports whether j is the zero Job, which no parser returns.
func (j Job) IsZero() bool { return j.id == "" }

// Next returns the first time the job is due strictly after both after and
// firstSeen, the time its file was first seen (brokerd keeps it, with the
// runs): nothing is due before a job existed, and every counts from then,
// first due one interval after. A zero firstSeen means the job is first
// seen at after. The zero Time means never (the zero Job).
func (j Job) Next(firstSeen, after time.Time) time.Time {
	if j.IsZero() {
		return time.Time{}
	}
	if firstSeen.IsZero() {
		firstSeen = after
	}
	if after.Before(firstSeen) {
		after = firstSeen
	}
	if j.every == 0 {
		return j.cron.Next(after, j.zone)
	}
	passed := after.Sub(firstSeen) / j.every
	return firstSeen.Add((passed + 1) * j.every)
}

// DeliveryKind says where a job's reply goes.
type DeliveryKind uint8

const (
	DeliverLog     DeliveryKind = iota + 1 // only to the session log
	DeliverOwner                           // the owner's Mattermost direct messages
	DeliverChannel                         // a channel gatewayd listens in
)

// Delivery is a job's deliver key. The zero Delivery is invalid.
type Delivery struct {
	kind    DeliveryKind
	channel string
}

// ParseDelivery reads "log", "mattermost" (the owner's direct messages) or
// "mattermost:<channel id>", a Mattermost id of 26 lowercase letters and
// digits. Whether gatewayd lists the channel is config's business, not a
// job file's; `boxmaker grants check` compares them.
func ParseDelivery(s string) (Delivery, error) {
	switch rest, isChannel := strings.CutPrefix(s, "mattermost:"); {
	case s == "log":
		return Delivery{kind: DeliverLog}, nil
	case s == "mattermost":
		return Delivery{kind: DeliverOwner}, nil
	case isChannel && isMattermostID(rest):
		return Delivery{kind: DeliverChannel, channel: rest}, nil
	case isChannel:
		return Delivery{}, fmt.Errorf("deliver %q: a Mattermost channel id is 26 lowercase letters and digits (not the channel's name)", s)
	}
	return Delivery{}, fmt.Errorf(`deliver must be "mattermost" (the owner's direct messages), "mattermost:<channel id>" or "log", not %q`, s)
}

func isMattermostID(s string) bool {
	return len(s) == 26 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
}

func (d Delivery) Kind() DeliveryKind { return d.kind }

// Channel is the channel id of a DeliverChannel delivery, else "".
func (d Delivery) Channel() string { return d.channel }

// String is the value as a job file writes it.
func (d Delivery) String() string {
	switch d.kind {
	case DeliverLog:
		return "log"
	case DeliverOwner:
		return "mattermost"
	case DeliverChannel:
		return "mattermost:" + d.channel
	}
	return fmt.Sprintf("Delivery(%d)", d.kind)
}

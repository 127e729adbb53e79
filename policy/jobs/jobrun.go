package jobs

import (
	"strings"
	"time"

	"boxmaker/wire"
)

// DefaultMaxTurn bounds a run whose job file sets no max_turn. A job runs
// unattended, so it needs some bound; ten minutes is the default approval
// timeout too, so an ask in a job can still be answered within one run.
const DefaultMaxTurn = 10 * time.Minute

// TurnLimit is how long a run of j may take: max_turn, or DefaultMaxTurn.
func (j Job) TurnLimit() time.Duration {
	if j.maxTurn > 0 {
		return j.maxTurn
	}
	return DefaultMaxTurn
}

// JobSessionPrefix begins every session brokerd mints for a job. Nothing
// else may be named so (loopd refuses a chat that would create one), though
// the name alone never gives a session a job's grants: brokerd's record does.
const JobSessionPrefix = "job-"

// JobSession names the session of a run of the job id: the due time in UTC
// to the minute (job-<id>-<yyyymmddhhmm>) for a scheduled run, or the
// trigger time to the second (job-<id>-<yyyymmddhhmmss>) for the owner's.
func JobSession(id string, at time.Time, owner bool) (wire.SessionID, error) {
	layout := "200601021504"
	if owner {
		layout = "20060102150405"
	}
	return wire.ParseSessionID(JobSessionPrefix + id + "-" + at.UTC().Format(layout))
}

// IsJobSession reports whether a session is named as brokerd names job runs.
func IsJobSession(id wire.SessionID) bool {
	return strings.HasPrefix(id.String(), JobSessionPrefix)
}

// lookBack are the windows Last searches, shortest first: a frequent job
// is found in the first, so the walk forward stays short, and a rare one
// (yearly) in a later one.
var lookBack = []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 8 * 367 * 24 * time.Hour}

// Last returns the latest time j was due strictly after after and at or
// before now (firstSeen as for Next), and whether there is one. Due times
// older than eight years are not looked for.
func (j Job) Last(firstSeen, after, now time.Time) (time.Time, bool) {
	if j.IsZero() || !after.Before(now) {
		return time.Time{}, false
	}
	for _, w := range lookBack {
		from := now.Add(-w)
		if from.Before(after) {
			from = after
		}
		due := j.Next(firstSeen, from)
		if !due.IsZero() && !due.After(now) {
			for next := j.Next(firstSeen, due); !next.IsZero() && !next.After(now); next = j.Next(firstSeen, due) {
				due = next
			}
			return due, true
		}
		if from.Equal(after) {
			break
		}
	}
	return time.Time{}, false
}

// DurationText writes d as a job file would: 6h, 10m, 90s, not 6h0m0s.
func DurationText(d time.Duration) string { return durationText(d) }

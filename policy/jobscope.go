package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"boxmaker/wire"
)

// MaxJobID is the longest job id: brokerd's session ids for the job,
// job-<id>-<yyyymmddhhmmss>, must fit in a wire.SessionID. The rule is
// here, not in policy/jobs, because a grant's jobs key names job ids too.
const MaxJobID = wire.MaxSessionID - len("job-") - len("-20261201070000")

// CheckJobID keeps a job id a file stem and a part of a session id.
func CheckJobID(id string) error {
	if id == "" || len(id) > MaxJobID || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("job id %q must be 1 to %d of [a-z0-9-], so that its session ids fit in %d characters", id, MaxJobID, wire.MaxSessionID)
	}
	return nil
}

// parseGrantJobs checks a grant's jobs list: job ids, each once.
func parseGrantJobs(ids []string) ([]string, error) {
	if len(ids) == 0 {
		// As with constraints, an empty list would match nothing: a grant
		// that applies in no session is a mistake, not a way to disable it.
		return nil, errors.New("jobs = [] would apply in no session: name the jobs the grant is for, or leave jobs out for every session")
	}
	for i, id := range ids {
		if err := CheckJobID(id); err != nil {
			return nil, fmt.Errorf("jobs: %v", err)
		}
		if slices.Contains(ids[:i], id) {
			return nil, fmt.Errorf("jobs names %q twice", id)
		}
	}
	return slices.Clone(ids), nil
}

// AppliesInJob reports whether g may take part in a decision in a session
// brokerd minted for the job job, or, when job is "", in a session that is
// no job's (a chat, a Mattermost thread). A grant without jobs applies in
// every session; a grant with jobs only in sessions of those jobs.
//
// job must come from brokerd's own record of the sessions it minted, never
// from a session's name or anything loopd says: a compromised loopd can
// name a session job-<id>-<time>.
func (g Grant) AppliesInJob(job string) bool {
	return g.jobs == nil || job != "" && slices.Contains(g.jobs, job)
}

// GrantsForJob returns, in their order, the grants that apply in a session
// of job ("" for a session that is no job's): what brokerd hands to Decide,
// and to Grant.UsableIn for tool_list. The choice of grants is the only
// thing a job changes; taint, untrusted and ask work as in any session.
// When every grant applies, as in any session while no grant names a job,
// the result is grants itself rather than a copy (brokerd decides over a
// thousand grants on every call, and the copy was most of its garbage), so
// neither the caller nor the result may be changed in place; Dir.Load's
// grants are shared the same way.
func GrantsForJob(grants []Grant, job string) []Grant {
	first := slices.IndexFunc(grants, func(g Grant) bool { return !g.AppliesInJob(job) })
	if first < 0 {
		return grants
	}
	out := make([]Grant, first, len(grants)-1)
	copy(out, grants[:first])
	for _, g := range grants[first+1:] {
		if g.AppliesInJob(job) {
			out = append(out, g)
		}
	}
	return out
}

package loopd

import (
	"boxmaker/policy/jobs"
	"boxmaker/wire"
)

// The job kinds of loop.sock are in the role table: the owner's socket
// takes job_run (start the run brokerd was just told of), gatewayd's
// job_deliveries (the replies that go to Mattermost), neither the other's.

// refuseJobSession refuses a chat_send that would create a session named
// as brokerd names job runs: those are the scheduler's. Only gatewayd may
// name new sessions at all, and it names them mm-<thread>; the name gives
// no grants (brokerd's record does), but a chat made under a name brokerd
// is about to mint would put other words before a job's prompt. A job's
// session, once made, may be continued like any other.
func (l *loopd) refuseJobSession(m wire.ChatSend) error {
	if m.Session == nil || !jobs.IsJobSession(*m.Session) {
		return nil
	}
	if _, _, ok, _ := l.store.lookup(*m.Session); ok {
		return nil
	}
	return clientError{"session names beginning " + jobs.JobSessionPrefix + " are for scheduled jobs (boxmaker jobs run ID starts one)"}
}

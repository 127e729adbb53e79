// Package jobruns is brokerd's own record of scheduled jobs' runs
// (DESIGN.md section 13), the files under broker/jobs/: when brokerd first
// saw each job, the latest due time it minted a run for, and the runs. It
// mints a run's session for loopd's job_start (a due run, a missed one
// with catch_up, or the owner's trigger), records how loopd says a run
// ended, answers job_list and job_show, and says which session is a job's
// running run, the only thing that gives a session a job's grants.
//
// jobruns must never mint a run for a due time it minted one for before
// (a record that does not parse is an error, never a fresh one), never let
// a run's session be learnt before the run is durable and the caller's
// record of its start (brokerd's audit write) has returned, never count a
// session as a job's by its name or loopd's word (only a running run it
// minted, before its deadline), never let a brokerd restart leave a run
// running, never decide a call, and never import brokerd or another role.
package jobruns

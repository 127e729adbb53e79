// Package jobs reads the owner's scheduled jobs (DESIGN.md section 13):
// one file per job, jobs/<id>.toml, parsed strictly as grant files are
// (policy.DecodeFile), its cron schedule or interval, where its reply goes,
// its time limit, and when a run was or will next be due. It also names the
// sessions brokerd mints for a job's runs.
//
// A job decides nothing: which grants apply in a job's session is the
// grants' business (policy.Grant.AppliesInJob, GrantsForJob), and brokerd
// alone knows which sessions are a job's. jobs must never do I/O beyond
// reading job files, never let a file that failed to parse be run or
// listed as valid, never take a session's job from its name (IsJobSession
// says only how brokerd names them), and never import another boxmaker
// package than wire and policy.
package jobs

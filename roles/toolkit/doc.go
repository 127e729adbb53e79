// Package toolkit is the role that runs inside each tool sandbox:
// `boxmaker toolkit <tool>`, started by brokerd through bubblewrap. It reads
// one job on stdin, confines itself (rlimits, Landlock limited to the job's
// mounts, a seccomp filter), runs the one tool, and writes one Output on
// stdout. Hostile bytes (web pages, a hosted model's reply) are parsed here
// on purpose, in the least privileged process boxmaker has.
//
// toolkit must never run a tool before it is confined or when confinement
// fails, label its own output (class, trust: brokerd does that from the
// grant), hold or ask for a secret (egressd adds credentials outside),
// reach the network except through the egress descriptor it was handed,
// or import another role's package.
package toolkit

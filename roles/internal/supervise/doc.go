// Package supervise is `boxmaker up`: it starts each daemon of the role
// table by re-executing the boxmaker binary with argv[0] set to the role
// (under the role's own user when it runs as root), prefixes their log lines
// with the role's name, restarts a role that dies (with backoff, up to a
// limit), reports readiness when every socket answers, and stops them all on
// SIGINT or SIGTERM. A role under a user of its own is stopped whole: when
// its main process ends, every other process of its uid is ended too, so
// nothing it started (setsid or not) outlives it.
//
// supervise must never run a role under a uid other than the one the role
// table names (or the caller's, when not root), never hand a role a
// secret in argv or the environment, and never end processes by uid unless
// the role has a uid of its own.
package supervise

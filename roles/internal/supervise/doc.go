// Package supervise is `boxmaker up`: it starts each daemon of the role
// table by re-executing the boxmaker binary with argv[0] set to the role
// (under the role's own user when it runs as root), writes their output to
// one log, a timestamp and the role's name on each line, reports readiness
// when every role listens on its sockets, restarts a role that dies (with
// backoff; one that keeps dying is marked failed and retried rarely, while
// the others go on), and stops them all, last started first, on SIGINT or
// SIGTERM. A role under a user of its own is stopped whole: when its main
// process ends, every other process of its uid is ended too, so nothing it
// started (setsid or not) outlives it.
//
// supervise must never run a role under a uid other than the one the role
// table names (or the caller's, when not root), never hand a role a
// secret in argv or the environment, never connect to a role's socket (it
// is no role's client), and never end processes by uid unless the role has
// a uid of its own.
package supervise

// Package bxctl is the owner's command line: the commands reachable as
// `boxmaker <command>` and through a `bxctl` symlink. It runs as the owner,
// listens on nothing, and reaches the daemons only through their sockets.
//
// bxctl must never import another role's package, write grants, secrets or
// the audit log, or trust a daemon's words where it can ask the owner's own
// files or brokerd's admin socket instead.
package bxctl

// Package bxctl is the owner's command line: the commands reachable as
// `boxmaker <command>` and through a `bxctl` symlink. It runs as the owner,
// listens on nothing, and reaches the daemons only through their sockets.
// What install and up do on the host as root (accounts, directories,
// owners, the secrets' copies, up's lock) is roles/internal/hostsetup's;
// bxctl only parses the command line and calls it.
//
// bxctl must never import another role's package, write grants, secrets or
// the audit log, or trust a daemon's words where it can ask the owner's own
// files or brokerd's admin socket instead. As root it changes no file of
// the home itself but run/up.json (privops_test.go lists that); the rest
// goes through hostsetup. A role's files that it reads while the role is
// down (loopd's sessions/, brokerd's broker/jobs/) are opened only beneath
// the home, through nofollow, never through a link a role could plant.
package bxctl

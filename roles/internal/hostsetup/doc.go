// Package hostsetup is the work boxmaker does on the host as root, for
// `boxmaker install --systemd` and for `boxmaker up` run as root: the role
// users and pair groups, the binary, its links and the units, the home's
// directories with their owners and modes, brokerd's first hand-over of
// memory/, the roles' copies of their secrets, up's lock and log, and the
// mount view through which the role users reach the binary and the home.
// What to make comes from the role table through roles/internal/units; this
// package only carries it out. bxctl's install and up commands call it.
//
// hostsetup must never follow a path a role can write: below a directory a
// role owns it works through descriptors, one name at a time, never
// following a link (privops_test.go lists every call with its reason). It
// must never touch the home while a process of a role's uid lives, never
// give a role a secret but its own, never read a secret's value but to copy
// it into that role's credential directory, never talk to a role's socket
// or trust anything a role wrote, and never run for anyone but root acting
// for the owner (up not as root does none of this).
package hostsetup

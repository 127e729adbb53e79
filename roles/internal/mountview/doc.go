// Package mountview lets `boxmaker up`, as root, run the roles wherever the
// binary and the home sit. A clone under root's own 0700 home is the
// common case: the role users cannot search /root, so they can reach
// neither the binary nor .state/. Blocked finds such directories; a View is
// a thread of up in a mount namespace of its own, where each of them is
// covered by a tmpfs that holds only the paths the roles need, bind-mounted
// at their own paths, and up starts the roles from that thread. The roles
// see the same paths as up and the owner (sockets, logs and messages name
// the real home), and nothing of the covered directory but what they need;
// the host's mounts do not change, and the namespace ends with its last
// process.
//
// mountview must never change the host's mount table (propagation is made
// private before anything is mounted), never make a role's reach wider than
// the paths it is given, and never follow a path a role could change: up
// gives it the home and the binary only after rootSetup has checked them.
package mountview

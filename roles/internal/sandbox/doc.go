// Package sandbox starts one tool run in a fresh bubblewrap sandbox for
// brokerd: new user, pid, ipc, uts, cgroup and network namespaces, a
// read-only root that holds only the boxmaker executable (and /usr for
// shell), the granted paths, and fd 3 to egressd when the tool needs the
// web. It bounds the run's wall time and output, kills the whole process
// group when a bound is passed, and decodes the one Output strictly.
//
// It also resolves granted host paths (Resolve) so that a symlink cannot
// carry a mount outside its grant, and checks at brokerd's start that
// bubblewrap and Landlock are there (Check).
//
// sandbox must never build a shell command line (argument vectors only),
// pass its own environment or any secret into the sandbox, mount a path
// that has not been resolved, fall back to running a tool unsandboxed, or
// trust anything the sandbox writes beyond one strictly decoded Output.
package sandbox

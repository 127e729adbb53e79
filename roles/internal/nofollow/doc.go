// Package nofollow opens a path without following a symbolic link anywhere
// in it: openat2(2) with RESOLVE_NO_SYMLINKS (and RESOLVE_BENEATH when
// asked), or, where openat2 answers ENOSYS, a walk that opens one component
// at a time with O_NOFOLLOW from the descriptor before it. systemd's
// RestrictSUIDSGID= is why the walk exists: its seccomp filter cannot read
// openat2's flags (they are behind a pointer), so it makes openat2 fail with
// ENOSYS for the whole unit, brokerd's included (docs/decisions.md,
// 2026-12-01, "openat2 under RestrictSUIDSGID").
//
// nofollow must never open a path by a call that follows a link (no plain
// open, no openat without O_NOFOLLOW), never fall back for a request it
// cannot honour in full (it answers the kernel's ENOSYS instead), and never
// step to a parent directory in the walk.
package nofollow

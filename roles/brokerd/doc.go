// Package brokerd is the broker: every tool call a model asks for arrives
// here, is decided from the owner's grants, written to the audit log and
// made durable before it takes effect, run in a fresh sandbox when allowed,
// and answered with a result labelled from the grant. It keeps each session's
// taint and untrusted flag from the results it has returned.
//
// This package is the server (brokerd.go), the dispatch of each kind
// (dispatch.go and the admin handlers) and the call path (call.go, then
// the runner, the mounts, approvals, inspect and the result's label). What
// brokerd keeps lives in a package of its own under internal/: sessions,
// handles, notes, jobruns, checkpoints, secrets and mcppool.
//
// brokerd must never take a session's state, a result's label or an approval
// from loopd's socket; never run a tool without a valid policy.Decision and a
// durable audit record; never reach the network itself (egressd does, with
// the descriptor brokerd hands it); and never import another role's package.
package brokerd

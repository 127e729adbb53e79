// Package checkpoints is brokerd's side of the audit log's checkpoints
// (DESIGN.md section 14): brokerd's signing key in broker/ (made at first
// start, renamed to the log's origin), its verifier keys copied beside the
// log for the owner's verify, the audit log opened with checkpoints signed
// by that key, and the client that hands each durable checkpoint, with its
// consistency proof, to witnessd, queueing a bounded number while the
// witness is down.
//
// checkpoints must never put the signing key anywhere but broker/ (never
// in a sandbox's mounts, never beside the log), never hand the witness a
// checkpoint before it is durable, never make brokerd wait for the witness
// (a full queue drops the oldest, which the newest extends), never decide a
// call, and never import brokerd or another role.
package checkpoints

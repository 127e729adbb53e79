// Package audit keeps boxmaker's audit log: one hash-chained record per
// decision, in daily files YYYY-MM-DD.jsonl named by each record's UTC date.
// It holds the writer (the only code that appends), the recovery it runs when
// it opens a log whose last write was torn, the verifier behind
// `boxmaker audit verify`, and the readers behind `audit head` and `audit tail`;
// the RFC 6962 Merkle tree over the records (tree.go, kept with x/mod's
// tlog), its C2SP signed checkpoints (checkpoint.go), inclusion and
// consistency proofs (prove.go), C2SP cosignatures (cosign.go), and the
// reader of the witness's copy of them (witness.go), which witnessd writes.
//
// The chain: every line is one wire.AuditEntry in wire's canonical bytes; the
// hash of a record is SHA-256 over its stored line without the newline; prev
// is the previous record's hash (64 zeros for the first record ever); seq
// starts at 1 and rises by exactly 1 across files, recovery records included.
//
// What the package promises, and must never break:
//   - Append returns only after the record's bytes, and the directory entry of
//     a file it created, have been fsynced. Concurrent appends share one write
//     and one fsync (group commit) but none returns early.
//   - After any write or fsync error the Writer refuses every later append.
//     It never retries: after a failed fsync the kernel may have dropped the
//     dirty pages, and a retry that succeeds would claim data that is gone.
//   - Nothing is truncated, rewritten or deleted. A torn last line is kept and
//     described by a recovery record appended after it.
//   - The verifier hashes the bytes as stored and never re-serialises; it reads
//     with bounded memory whatever the log's size.
//   - Only one Writer per directory (an flock on its .lock file), and the
//     Writer never appends to a log that does not verify.
//   - The tree's leaf of record N is the bytes the chain hashes; a checkpoint
//     is signed only after the tree's hashes up to it are fsynced, and
//     never one inconsistent with an earlier one. The tree file is derived:
//     Open rebuilds what the log and the newest checkpoint's root do not
//     vouch for, and says so; no proof is printed before it is checked.
//
// audit imports no boxmaker package but wire.
package audit

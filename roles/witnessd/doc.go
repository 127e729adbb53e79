// Package witnessd is the audit witness (DESIGN.md section 14, issue 29): a
// small role, under its own uid, that is a C2SP tlog-witness for this one
// log. brokerd sends each checkpoint of the audit log's Merkle tree over
// witness.sock (checkpoint_add) with a consistency proof from the one the
// witness holds; the witness takes it only when it is within audit's size
// bound (checked before it is read), signed by the key it trusts (learned
// on first use, said and recorded in witness/first-use, kept in
// witness/key.pub; the same key renamed is taken too), of its origin, and
// the proof shows its tree extends the one held. It adds its own
// cosignature (C2SP tlog-cosignature, its Ed25519 key in witness/cosign.key,
// made at its first start, readable by its uid alone), keeps the cosigned
// note in witness/, a directory brokerd's uid can neither read nor write,
// and answers with it. A smaller size (a rollback), the same size with
// another root (a fork), a missing or wrong proof, another key or origin,
// and a checkpoint_submit (no proof) are refused and logged. With [gateway]
// configured it hands the last cosigned checkpoint of each hour to
// gatewayd for the owner's DM, so that a copy lives off the host.
//
// witnessd must never rewrite or remove a checkpoint it took, change the
// key it trusts on its own (beyond the same key's new name), take a
// checkpoint it could not check or whose consistency it could not prove
// (the one exception: the first of the tree's form after a checkpoint of
// the chain alone, which has no root to prove from, said in its log), take
// an older checkpoint (or none) for its newest when its file's end cannot
// be read, let its cosignature key leave witness/, read brokerd's
// directories, or import another role's package.
package witnessd

// Package witnessd is the audit witness (DESIGN.md section 14): a small
// role, under its own uid, that keeps the signed checkpoints brokerd sends
// over witness.sock in witness/, a directory brokerd's uid cannot write.
// It takes a checkpoint only when it is within audit's size bound (checked
// before it is read), signed by the key it trusts (learned on first use and
// kept in witness/key.pub) and extends the newest one it holds: a higher seq, or the same seq with the same hash. A lower
// seq, or the same seq with another hash, is a rollback: refused and
// logged, as is a note signed by another key. With [gateway] configured it
// hands the last checkpoint of each hour to gatewayd for the owner's DM, so
// that a copy lives off the host.
//
// witnessd must never rewrite or remove a checkpoint it took, change the
// key it trusts on its own, take a checkpoint it could not check, take an
// older checkpoint (or none) for its newest when its file's end cannot be
// read, read
// brokerd's directories, or import another role's package.
package witnessd

package wire

// The kinds of the audit witness (DESIGN.md section 14). Which socket may
// carry which kind is the listeners' table:
//   - brokerd to witnessd: checkpoint_submit, answered by
//     checkpoint_witnessed (the witness holds it, or already held it) or
//     checkpoint_refused (it does not extend what the witness holds, or
//     its key or signature is wrong).
//   - brokerd to witnessd: checkpoint_add, C2SP tlog-witness's
//     add-checkpoint: the checkpoint with a consistency proof from the size
//     brokerd believes the witness holds, answered by checkpoint_cosigned
//     (the checkpoint with the witness's cosignature) or checkpoint_refused
//     (held: the size the witness holds, for a proof from there).
//     checkpoint_submit, which carries no proof, is refused since the tree.
//   - witnessd to gatewayd: checkpoint_post, the last checkpoint of an
//     hour for the owner's DM, answered by checkpoint_posted.
// Notes are C2SP signed notes (audit.SignCheckpoint's text); the wire
// carries them unparsed, and the witness parses and checks them.

// CheckpointSubmit is one signed checkpoint of brokerd's audit chain with
// the verifier key (golang.org/x/mod/sumdb/note's form) that checks it.
type CheckpointSubmit struct {
	Key  string `json:"key"`
	Note string `json:"note"`
}

// CheckpointWitnessed is the newest checkpoint the witness holds once it
// took the submitted one.
type CheckpointWitnessed struct {
	Seq  uint64 `json:"seq"`
	Hash Hash32 `json:"hash"`
}

// CheckpointRefused says why the witness did not take a checkpoint, and
// the seq of the newest it holds (0: none).
type CheckpointRefused struct {
	Held   uint64 `json:"held"`
	Reason string `json:"reason"`
}

// CheckpointAdd is one signed checkpoint of the audit log's tree, the
// verifier key that checks it, the size of the checkpoint the witness is
// believed to hold (0: none) and the consistency proof from that tree to
// this one, each hash in base64 as in the checkpoint (C2SP tlog-witness).
type CheckpointAdd struct {
	Key   string   `json:"key"`
	Old   uint64   `json:"old"`
	Proof []string `json:"proof"`
	Note  string   `json:"note"`
}

// CheckpointCosigned is the witness's answer to a checkpoint_add it took,
// or held already: the checkpoint's size and its note with the witness's
// cosignature (C2SP tlog-cosignature) added.
type CheckpointCosigned struct {
	Size uint64 `json:"size"`
	Note string `json:"note"`
}

// CheckpointPost asks gatewayd to post a witnessed checkpoint, the last of
// its hour, to the owner's direct messages.
type CheckpointPost struct {
	Seq  uint64    `json:"seq"`
	Hash Hash32    `json:"hash"`
	Time Timestamp `json:"time"`
	Note string    `json:"note"`
}

// CheckpointPosted is the post gatewayd made.
type CheckpointPosted struct {
	Post string `json:"post"`
}

func (CheckpointSubmit) isMessage()    {}
func (CheckpointWitnessed) isMessage() {}
func (CheckpointRefused) isMessage()   {}
func (CheckpointPost) isMessage()      {}
func (CheckpointAdd) isMessage()       {}
func (CheckpointCosigned) isMessage()  {}
func (CheckpointPosted) isMessage()    {}

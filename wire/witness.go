package wire

// The kinds of the audit witness (DESIGN.md section 14). Which socket may
// carry which kind is the listeners' table:
//   - brokerd to witnessd: checkpoint_submit, answered by
//     checkpoint_witnessed (the witness holds it, or already held it) or
//     checkpoint_refused (it does not extend what the witness holds, or
//     its key or signature is wrong).
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
func (CheckpointPosted) isMessage()    {}

package wire

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// AuditEntry is one line of the audit log: an AuditRecord or, after a torn
// line, a RecoveryRecord. Both chain by Seq and Prev.
type AuditEntry interface {
	Chain() (seq uint64, time Timestamp, prev Hash32)
	isAuditEntry()
}

// AuditRecord is one decision, written and made durable before it takes effect.
type AuditRecord struct {
	Seq          uint64         `json:"seq"`
	Time         Timestamp      `json:"time"`
	Prev         Hash32         `json:"prev"`
	Session      SessionID      `json:"session"`
	Call         CallID         `json:"call"`
	Tool         string         `json:"tool"`
	Arguments    string         `json:"arguments"` // in full
	SessionTaint DataClass      `json:"session_taint"`
	Decision     DecisionRecord `json:"decision"`
}

// RecoveryRecord follows a torn line, which it describes, and continues the
// chain from the last complete record before it.
type RecoveryRecord struct {
	Seq      uint64    `json:"seq"`
	Time     Timestamp `json:"time"`
	Prev     Hash32    `json:"prev"`
	Recovery Recovery  `json:"recovery"`
}

// Recovery names the torn bytes: their length and SHA-256.
type Recovery struct {
	TornBytes  uint64 `json:"torn_bytes"`
	TornSHA256 Hash32 `json:"torn_sha256"`
}

func (r AuditRecord) Chain() (uint64, Timestamp, Hash32)    { return r.Seq, r.Time, r.Prev }
func (r RecoveryRecord) Chain() (uint64, Timestamp, Hash32) { return r.Seq, r.Time, r.Prev }
func (AuditRecord) isAuditEntry()                           {}
func (RecoveryRecord) isAuditEntry()                        {}

// DecisionRecord is what the policy or the owner decided: DecisionAllowed,
// DecisionApproved or DecisionDenied.
type DecisionRecord interface{ isDecisionRecord() }

// DecisionAllowed: an auto grant let the call run.
type DecisionAllowed struct {
	Grant string `json:"grant"`
}

// DecisionApproved: an ask grant matched and the owner approved.
type DecisionApproved struct {
	Grant    string  `json:"grant"`
	Approver string  `json:"approver"` // local:<user> or mm:<user id>
	Post     *string `json:"post"`     // the Mattermost post, if approved there
}

// DecisionDenied: the call did not run; Grant is the grant that decided, if any.
type DecisionDenied struct {
	Reason DenyReason `json:"reason"`
	Grant  *string    `json:"grant"`
}

func (DecisionAllowed) isDecisionRecord()  {}
func (DecisionApproved) isDecisionRecord() {}
func (DecisionDenied) isDecisionRecord()   {}

var decisions = newUnion[DecisionRecord]("outcome", "",
	variant{"allowed", DecisionAllowed{}},
	variant{"approved", DecisionApproved{}},
	variant{"denied", DecisionDenied{}},
)

// EncodeAuditEntry returns e's canonical line, without a newline.
func EncodeAuditEntry(e AuditEntry) ([]byte, error) {
	switch e := e.(type) {
	case AuditRecord:
		return encodeTop(&e)
	case RecoveryRecord:
		return encodeTop(&e)
	default:
		return nil, fmt.Errorf("wire: encode: %T is not an audit entry", e)
	}
}

// DecodeAuditEntry parses one audit line (without its newline) strictly. A
// line with a "recovery" member is a RecoveryRecord, any other an AuditRecord.
func DecodeAuditEntry(line []byte) (AuditEntry, error) {
	if hasMember(line, "recovery") {
		var r RecoveryRecord
		if err := decodeTop(line, &r); err != nil {
			return nil, err
		}
		return r, nil
	}
	var r AuditRecord
	if err := decodeTop(line, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// hasMember reports whether b is a JSON object with a top-level member name.
func hasMember(b []byte, name string) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsonOptions)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() == '"' {
		n, err := readName(dec)
		if err != nil {
			return false
		}
		if n == name {
			return true
		}
		if dec.SkipValue() != nil {
			return false
		}
	}
	return false
}

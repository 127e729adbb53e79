package audit

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"boxmaker/wire"
)

// Every line the writer splices from an appender's body and the leader's
// chain fields is the line wire.EncodeAuditEntry writes for the whole entry:
// records of every decision, strings that need escapes or are not ASCII,
// recovery records, and chain fields from zero to their largest.
func TestSplicedLinesAreCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	post := "post-1"
	grant := "g"
	decisions := []wire.DecisionRecord{
		wire.DecisionAllowed{Grant: "fetch-docs"},
		wire.DecisionApproved{Grant: "notes", Approver: "local:owner", Post: nil},
		wire.DecisionApproved{Grant: "notes", Approver: "mm:abc", Post: &post},
		wire.DecisionDenied{Reason: wire.NoGrant, Grant: nil},
		wire.DecisionDenied{Reason: wire.TaintTooHigh, Grant: &grant},
	}
	args := []string{`{}`, `{"command":"echo \"hi\"\n\ttab \\ back"}`, "{\"path\":\"café \u2028 \x01 <&> \x7f\"}", ""}
	chains := []chainFields{
		{},
		{Seq: 1, Time: 1, Prev: wire.Hash32{1}},
		{Seq: 1<<64 - 1, Time: wire.MaxTimestamp, Prev: wire.Hash32{0xff, 0xee}},
	}
	var entries []wire.AuditEntry
	for i := range 200 {
		c := chains[i%len(chains)]
		if i >= len(chains) {
			c = chainFields{Seq: r.Uint64(), Time: wire.Timestamp(r.Uint64N(uint64(wire.MaxTimestamp) + 1)), Prev: randomHash(r)}
		}
		if i%7 == 0 {
			entries = append(entries, wire.RecoveryRecord{Seq: c.Seq, Time: c.Time, Prev: c.Prev,
				Recovery: wire.Recovery{TornBytes: r.Uint64(), TornSHA256: randomHash(r)}})
			continue
		}
		entries = append(entries, wire.AuditRecord{Seq: c.Seq, Time: c.Time, Prev: c.Prev,
			Session: mustSession(t, "chat-1"), Call: wire.CallID(r.Uint64()), Tool: "shell",
			Arguments: args[i%len(args)], SessionTaint: wire.Secret, Decision: decisions[i%len(decisions)]})
	}
	var cache cachedTime
	for _, e := range entries {
		want, err := wire.EncodeAuditEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		seq, ts, prev := e.Chain()
		body, err := encodeBody(withoutChain(e))
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendChain(nil, chainFields{Seq: seq, Time: ts, Prev: prev}, &cache)
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, body...); !bytes.Equal(got, want) {
			t.Errorf("spliced\n%s\nencoded\n%s", got, want)
		}
	}
}

// An entry whose chain fields are not zero has no body to cut; the writer
// never makes one, but the check stands.
func TestEncodeBodyRefusesChainFields(t *testing.T) {
	rec := sampleRecord(t, 1)
	rec.Seq = 5
	if _, err := encodeBody(rec); err == nil {
		t.Error("a record with seq 5 gave a body")
	}
}

func withoutChain(e wire.AuditEntry) wire.AuditEntry {
	switch e := e.(type) {
	case wire.AuditRecord:
		e.Seq, e.Time, e.Prev = 0, 0, wire.Hash32{}
		return e
	case wire.RecoveryRecord:
		e.Seq, e.Time, e.Prev = 0, 0, wire.Hash32{}
		return e
	}
	panic("not an audit entry")
}

func randomHash(r *rand.Rand) (h wire.Hash32) {
	for i := range h {
		h[i] = byte(r.Uint32())
	}
	return h
}

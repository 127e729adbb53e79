package audit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// randomRecord makes an entry with awkward values: every decision variant,
// strings with quotes, backslashes, control characters, DEL, U+2028 and
// non-ASCII, and times across the whole range a Timestamp holds.
func randomRecord(t testing.TB, r *rand.Rand) wire.AuditEntry {
	seq := r.Uint64N(1 << 40)
	if r.IntN(10) == 0 {
		seq = ^uint64(0) - r.Uint64N(3)
	}
	ts := wire.Timestamp(r.Uint64N(uint64(wire.MaxTimestamp) + 1))
	var prev wire.Hash32
	for i := range prev {
		prev[i] = byte(r.Uint32())
	}
	if r.IntN(5) == 0 {
		return wire.RecoveryRecord{Seq: seq, Time: ts, Prev: prev,
			Recovery: wire.Recovery{TornBytes: r.Uint64(), TornSHA256: prev}}
	}
	return wire.AuditRecord{
		Seq: seq, Time: ts, Prev: prev,
		Session:      mustSession(t, randomSession(r)),
		Call:         wire.CallID(r.Uint64()),
		Tool:         randomString(r),
		Arguments:    randomString(r),
		SessionTaint: wire.DataClass(1 + r.IntN(3)),
		Decision:     randomDecision(r),
	}
}

func randomSession(r *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789-"
	b := make([]byte, 1+r.IntN(wire.MaxSessionID))
	for i := range b {
		b[i] = chars[r.IntN(len(chars))]
	}
	return string(b)
}

func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", `"`, `\`, "/", "\n", "\t", "\x00", "\x1f", "\x7f", "<&>", "é", "\u2028", "\u2029", "😀", "{}", "null"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomDecision(r *rand.Rand) wire.DecisionRecord {
	var opt *string
	if r.IntN(2) == 0 {
		s := randomString(r)
		opt = &s
	}
	switch r.IntN(3) {
	case 0:
		return wire.DecisionAllowed{Grant: randomString(r)}
	case 1:
		return wire.DecisionApproved{Grant: randomString(r), Approver: randomString(r), Post: opt}
	default:
		reasons := []wire.DenyReason{wire.NoGrant, wire.GrantExpired, wire.TaintTooHigh,
			wire.DeniedByGrant, wire.ApprovalRefused, wire.ApprovalExpired, wire.UntrustedSession, wire.UnknownHandle, wire.UnpinnedTool}
		return wire.DecisionDenied{Reason: reasons[r.IntN(len(reasons))], Grant: opt}
	}
}

// sameAsWire checks the fast path against wire on one line: when the fast
// path accepts, wire must accept and read the same values.
func sameAsWire(t testing.TB, line []byte) (fastOK bool) {
	t.Helper()
	fast, ok := parseCanonical(line)
	if !ok {
		return false
	}
	slow, err := decodeStrict(line)
	if err != nil {
		t.Fatalf("fast path accepted what wire rejects (%v):\n%q", err, line)
	}
	if fast != slow {
		t.Fatalf("fast path read %+v, wire %+v:\n%q", fast, slow, line)
	}
	return true
}

// Every line the canonical encoder writes takes the fast path and reads the
// same as through wire.
func TestCanonicalAcceptsEncoderOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		line, err := wire.EncodeAuditEntry(randomRecord(t, r))
		if err != nil {
			t.Fatal(err)
		}
		if !sameAsWire(t, line) {
			t.Fatalf("fast path refused canonical line:\n%q", line)
		}
	}
}

func fixtureLines(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*", "*.jsonl"))
	var lines [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))...)
	}
	return lines
}

func TestCanonicalFixtureLines(t *testing.T) {
	for _, line := range fixtureLines(t) {
		_, err := decodeStrict(line)
		if ok := sameAsWire(t, line); ok != (err == nil) {
			t.Errorf("fast path ok=%v, wire says %v:\n%s", ok, err, line)
		}
	}
}

// Lines the fast path leaves to wire: each is either invalid, or valid but
// not in the canonical form. parseEntry must give wire's verdict.
func TestCanonicalLeavesTheRestToWire(t *testing.T) {
	base := `{"seq":1,"time":"2026-09-17T08:05:00.000Z","prev":"0000000000000000000000000000000000000000000000000000000000000000","session":"chat-1","call":1,"tool":"T","arguments":"A","session_taint":"private","decision":{"outcome":"allowed","grant":"g"}}`
	edits := []struct{ from, to string }{
		{`"seq":1`, `"seq":01`}, {`"seq":1`, `"seq":-1`}, {`"seq":1`, `"seq":1.0`}, {`"seq":1`, `"seq":1e0`},
		{`"seq":1`, `"seq":18446744073709551616`}, {`"seq":1`, `"seq": 1`}, {`"seq":1`, `"seq":null`},
		{`2026-09-17T08`, `1969-09-17T08`}, {`2026-09-17T08`, `2025-02-29T08`}, {`2026-09-17T08`, `2024-02-29T08`},
		{`T08:05:00`, `T24:05:00`}, {`T08:05:00`, `T08:05:60`}, {`.000Z`, `.00Z`}, {`.000Z`, `.000+00:00`},
		{`"prev":"0`, `"prev":"A`}, {`"session":"chat-1"`, `"session":"Chat-1"`},
		{`"session":"chat-1"`, `"session":"` + strings.Repeat("a", 65) + `"`}, {`"session":"chat-1"`, `"session":"\u0061"`},
		{`"tool":"T"`, `"tool":"\u00e9"`}, {`"tool":"T"`, `"tool":"\/"`}, {`"tool":"T"`, `"tool":"\u001F"`},
		{`"tool":"T"`, `"tool":"\ud800"`}, {`"tool":"T"`, "\"tool\":\"\xff\""}, {`"tool":"T"`, "\"tool\":\"\x01\""},
		{`"tool":"T"`, `"tool":"\u001f"`}, {`"private"`, `"Private"`}, {`"allowed"`, `"denied"`},
		{`"outcome":"allowed","grant":"g"`, `"grant":"g","outcome":"allowed"`}, {`}}`, `} }`}, {`}}`, `}}x`},
		{`"call":1`, `"call":1,"call":1`}, {`,"tool":"T"`, ``},
	}
	for _, e := range edits {
		line := []byte(strings.Replace(base, e.from, e.to, 1))
		sameAsWire(t, line)
		got, gotErr := parseEntry(line)
		want, wantErr := decodeStrict(line)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s -> %s: parseEntry %+v, %v; wire %+v, %v", e.from, e.to, got, gotErr, want, wantErr)
		}
	}
}

// FuzzCanonicalMatchesWire: the fast path never accepts what wire rejects,
// never reads a different value, and takes every line that is canonical
// (decodes and encodes back to the same bytes).
func FuzzCanonicalMatchesWire(f *testing.F) {
	for _, line := range fixtureLines(f) {
		f.Add(line)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		line, _ := wire.EncodeAuditEntry(randomRecord(f, r))
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fastOK := sameAsWire(t, line)
		ae, err := wire.DecodeAuditEntry(line)
		if err != nil || fastOK {
			return
		}
		if again, err := wire.EncodeAuditEntry(ae); err == nil && bytes.Equal(again, line) {
			t.Fatalf("fast path refused a canonical line:\n%q", line)
		}
	})
}

// Every calendar edge: days 0 to 32 of months 0 to 13 in common, leap and
// century years, and times at and past the end of their range.
func TestCanonicalTimestampsMatchWire(t *testing.T) {
	base := `{"seq":1,"time":"TS","prev":"0000000000000000000000000000000000000000000000000000000000000000","recovery":{"torn_bytes":1,"torn_sha256":"0000000000000000000000000000000000000000000000000000000000000000"}}`
	var stamps []string
	for _, y := range []int{0, 1969, 1970, 1999, 2000, 2023, 2024, 2100, 2400, 9999} {
		for m := range 14 {
			for d := range 33 {
				stamps = append(stamps, fmt.Sprintf("%04d-%02d-%02dT12:00:00.000Z", y, m, d))
			}
		}
	}
	stamps = append(stamps, "2026-09-17T23:59:59.999Z", "2026-09-17T24:00:00.000Z", "2026-09-17T23:60:00.000Z",
		"2026-09-17T23:59:60.000Z", "2026-09-17T99:00:00.000Z", "2026-9-17T23:59:59.999Z", "2026-09-17 23:59:59.999Z",
		"2026-09-17T23:59:59.999z", "+026-09-17T23:59:59.999Z", "2026-09-17T23:59:59.-99Z")
	for _, ts := range stamps {
		line := []byte(strings.Replace(base, "TS", ts, 1))
		sameAsWire(t, line)
		got, gotErr := parseEntry(line)
		want, wantErr := decodeStrict(line)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: parseEntry %+v, %v; wire %+v, %v", ts, got, gotErr, want, wantErr)
		}
	}
}

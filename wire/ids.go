package wire

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// SessionID names a session. It is used as a directory name, so it holds
// 1 to 64 characters of [a-z0-9-]. The zero value is invalid and does not encode.
type SessionID struct{ s string }

// MaxSessionID is the longest session id, in bytes.
const MaxSessionID = 64

// ParseSessionID checks s and returns it as a SessionID.
func ParseSessionID(s string) (SessionID, error) {
	if len(s) == 0 || len(s) > MaxSessionID {
		return SessionID{}, fmt.Errorf("session id must be 1 to %d characters, not %d", MaxSessionID, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return SessionID{}, fmt.Errorf("session id %q: character %q is not one of [a-z0-9-]", s, c)
		}
	}
	return SessionID{s}, nil
}

func (id SessionID) String() string { return id.s }

// IsZero reports whether id is the invalid zero value.
func (id SessionID) IsZero() bool { return id.s == "" }

func (id SessionID) MarshalText() ([]byte, error) {
	if id.s == "" {
		return nil, errors.New("session id is empty")
	}
	return []byte(id.s), nil
}

func (id *SessionID) UnmarshalText(b []byte) error {
	v, err := ParseSessionID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Epoch numbers a session's log files; the first is 1.
type Epoch uint32

// CallID numbers a session's tool calls; loopd makes them rise within a session.
type CallID uint64

// Hash32 is a SHA-256 digest; in JSON, 64 lowercase hex digits.
type Hash32 [32]byte

// ParseHash32 accepts exactly 64 lowercase hex digits.
func ParseHash32(s string) (Hash32, error) {
	var h Hash32
	if len(s) != 64 {
		return h, fmt.Errorf("hash must be 64 hex digits, not %d characters", len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h, fmt.Errorf("hash: character %q is not a lowercase hex digit", c)
		}
	}
	_, err := hex.Decode(h[:], []byte(s))
	return h, err
}

func (h Hash32) String() string { return hex.EncodeToString(h[:]) }

func (h Hash32) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

func (h *Hash32) UnmarshalText(b []byte) error {
	v, err := ParseHash32(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// Timestamp is a time in Unix milliseconds; in JSON exactly
// "YYYY-MM-DDTHH:MM:SS.mmmZ", which reaches the year 9999 at most.
type Timestamp uint64

// TimestampLayout is the only form a Timestamp takes in JSON.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// MaxTimestamp is 9999-12-31T23:59:59.999Z, the last time the layout can hold.
const MaxTimestamp Timestamp = 253402300799999

// TimestampOf converts t, which must lie between 1970 and the end of 9999.
func TimestampOf(t time.Time) (Timestamp, error) {
	ms := t.UnixMilli()
	if ms < 0 || Timestamp(ms) > MaxTimestamp {
		return 0, fmt.Errorf("time %s is outside 1970 to 9999", t.UTC().Format(time.RFC3339))
	}
	return Timestamp(ms), nil
}

// Time returns ts as a time in UTC.
func (ts Timestamp) Time() time.Time { return time.UnixMilli(int64(ts)).UTC() }

func (ts Timestamp) String() string { return ts.Time().Format(TimestampLayout) }

// ParseTimestamp accepts exactly the layout, with a date that exists.
func ParseTimestamp(s string) (Timestamp, error) {
	t, err := time.Parse(TimestampLayout, s)
	// Formatting back rejects what time.Parse tolerates beyond the layout.
	if err != nil || t.Format(TimestampLayout) != s {
		return 0, fmt.Errorf("timestamp %q is not a valid YYYY-MM-DDTHH:MM:SS.mmmZ time", s)
	}
	return TimestampOf(t)
}

func (ts Timestamp) MarshalText() ([]byte, error) {
	if ts > MaxTimestamp {
		return nil, fmt.Errorf("timestamp %d ms is after the year 9999", uint64(ts))
	}
	return []byte(ts.String()), nil
}

func (ts *Timestamp) UnmarshalText(b []byte) error {
	v, err := ParseTimestamp(string(b))
	if err != nil {
		return err
	}
	*ts = v
	return nil
}

// DataClass says how far data may travel. Classes are ordered
// Public < Private < Secret; the zero value is invalid.
type DataClass uint8

const (
	Public DataClass = iota + 1
	Private
	Secret
)

var dataClassNames = [...]string{Public: "public", Private: "private", Secret: "secret"}

// ParseDataClass accepts "public", "private" or "secret", lowercase.
func ParseDataClass(s string) (DataClass, error) {
	for c := Public; c <= Secret; c++ {
		if dataClassNames[c] == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("data class %q must be public, private or secret", s)
}

// Valid reports whether c is one of the three classes.
func (c DataClass) Valid() bool { return Public <= c && c <= Secret }

func (c DataClass) String() string {
	if !c.Valid() {
		return fmt.Sprintf("DataClass(%d)", uint8(c))
	}
	return dataClassNames[c]
}

// Max returns the higher of c and d.
func (c DataClass) Max(d DataClass) DataClass { return max(c, d) }

func (c DataClass) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, fmt.Errorf("invalid data class %d", uint8(c))
	}
	return []byte(dataClassNames[c]), nil
}

func (c *DataClass) UnmarshalText(b []byte) error {
	v, err := ParseDataClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// DenyReason says why a tool call was denied.
type DenyReason string

const (
	NoGrant         DenyReason = "no_grant"
	GrantExpired    DenyReason = "grant_expired"
	TaintTooHigh    DenyReason = "taint_too_high"
	DeniedByGrant   DenyReason = "denied_by_grant"
	ApprovalRefused DenyReason = "approval_refused"
	ApprovalExpired DenyReason = "approval_expired"
	// UntrustedSession: the session has read untrusted data and every grant
	// left for the call says when_untrusted = "deny" (DESIGN.md section 12).
	UntrustedSession DenyReason = "untrusted_session"
	// UnknownHandle: an argument names a handle ("handle:h<N>", or
	// inspect's handle) that the session does not have (DESIGN.md section 15).
	UnknownHandle DenyReason = "unknown_handle"
)

var denyReasons = []DenyReason{NoGrant, GrantExpired, TaintTooHigh, DeniedByGrant, ApprovalRefused, ApprovalExpired, UntrustedSession, UnknownHandle, UnpinnedTool}

func (r DenyReason) MarshalText() ([]byte, error) {
	if err := checkEnum(string(r), denyReasons); err != nil {
		return nil, fmt.Errorf("deny reason: %w", err)
	}
	return []byte(r), nil
}

func (r *DenyReason) UnmarshalText(b []byte) error {
	if err := checkEnum(string(b), denyReasons); err != nil {
		return fmt.Errorf("deny reason: %w", err)
	}
	*r = DenyReason(b)
	return nil
}

package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"boxmaker/wire"
)

// A record's canonical line is its chain fields (seq, time, prev: the first
// three members of every audit entry) followed by everything else, its body.
// The body does not depend on the chain, so each appender encodes its own
// body before it queues, in parallel with the others and with the fsync in
// progress; the group-commit leader only encodes the chain fields, splices
// them in front and hashes. The body is cut from the entry as wire's encoder
// writes it with its chain fields zero, so that it holds every byte wire
// would write; the chain fields are three leaves in a fixed layout.
// TestSplicedLinesAreCanonical proves that the spliced line is byte for
// byte the line wire.EncodeAuditEntry writes.

// chainFields are the first three members of every audit entry.
type chainFields struct {
	Seq  uint64
	Time wire.Timestamp
	Prev wire.Hash32
}

// appendChain appends c as the canonical encoding writes it, without the
// closing brace: `{"seq":1,"time":"…","prev":"…"`. A body completes the line.
// The leader runs it for every record, so it writes the three leaves itself,
// each as wire converts it (decimal digits, Timestamp.MarshalText, lowercase
// hex); timeText may hold c.Time's text already, from the record before.
func appendChain(dst []byte, c chainFields, timeText *cachedTime) ([]byte, error) {
	text, err := timeText.of(c.Time)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, c.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = append(dst, text...)
	dst = append(dst, `","prev":"`...)
	dst = hex.AppendEncode(dst, c.Prev[:])
	return append(dst, '"'), nil
}

// cachedTime is the text of the last time converted: the records of one
// batch mostly share their millisecond.
type cachedTime struct {
	ts   wire.Timestamp
	text []byte
}

func (c *cachedTime) of(ts wire.Timestamp) ([]byte, error) {
	if c.text == nil || c.ts != ts {
		text, err := ts.MarshalText()
		if err != nil {
			return nil, err
		}
		c.ts, c.text = ts, text
	}
	return c.text, nil
}

// zeroChain is the head of an entry encoded with its chain fields zero.
var zeroChain = sync.OnceValues(func() ([]byte, error) { return appendChain(nil, chainFields{}, &cachedTime{}) })

// encodeBody returns e's canonical line less its chain fields; e's own must
// be zero.
func encodeBody(e wire.AuditEntry) ([]byte, error) {
	head, err := zeroChain()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	line, err := wire.EncodeAuditEntry(e)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if !bytes.HasPrefix(line, head) || len(line) == len(head) || line[len(head)] != ',' {
		return nil, errors.New("audit: the entry's line does not begin with its chain fields")
	}
	return line[len(head):], nil
}

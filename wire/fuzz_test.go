package wire

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// seedAll adds every fixture to f. With framed set, frames go in as they are
// and JSON lines are framed; without it, JSON lines go in bare.
func seedAll(f *testing.F, framed bool) {
	for _, pattern := range []string{"wire/*/*.frame", "wire/valid/*.json", "log/*.json", "audit/*/*.jsonl"} {
		for _, file := range globFixtures(f, pattern) {
			data, _ := os.ReadFile(file)
			if filepath.Ext(file) == ".frame" {
				if framed {
					f.Add(data)
				}
				continue
			}
			for _, line := range bytes.Split(data, []byte("\n")) {
				switch {
				case len(line) == 0:
				case framed:
					f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(line))), line...))
				default:
					f.Add(line)
				}
			}
		}
	}
}

// FuzzReadEnvelope feeds arbitrary streams to the frame reader and decoder:
// nothing may panic, and whatever is accepted re-encodes to bytes that decode
// to the same envelope and are themselves a fixed point of the encoder.
func FuzzReadEnvelope(f *testing.F) {
	seedAll(f, true)
	f.Fuzz(func(t *testing.T, stream []byte) {
		e, err := ReadEnvelope(bytes.NewReader(stream))
		if err != nil {
			return
		}
		checkEnvelopeRoundTrip(t, e)
	})
}

func checkEnvelopeRoundTrip(t *testing.T, e Envelope) {
	out, err := Encode(e)
	if err != nil {
		t.Fatalf("accepted envelope %+v does not encode: %v", e, err)
	}
	again, err := Decode(out)
	if err != nil {
		t.Fatalf("re-encoded %s does not decode: %v", out, err)
	}
	if !reflect.DeepEqual(again, e) {
		t.Fatalf("round trip changed the envelope:\n %+v\n %+v", e, again)
	}
	if out2, _ := Encode(again); !bytes.Equal(out, out2) {
		t.Fatalf("encoding is not stable:\n %s\n %s", out, out2)
	}
}

// FuzzRecords does the same for session log and audit lines, which share the codec.
func FuzzRecords(f *testing.F) {
	seedAll(f, false)
	f.Fuzz(func(t *testing.T, line []byte) {
		if r, err := DecodeLogRecord(line); err == nil {
			out, err := EncodeLogRecord(r)
			if err != nil {
				t.Fatalf("accepted log record does not encode: %v", err)
			}
			if again, err := DecodeLogRecord(out); err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("log record round trip: %v\n %+v\n %+v", err, r, again)
			}
		}
		if e, err := DecodeAuditEntry(line); err == nil {
			out, err := EncodeAuditEntry(e)
			if err != nil {
				t.Fatalf("accepted audit entry does not encode: %v", err)
			}
			if again, err := DecodeAuditEntry(out); err != nil || !reflect.DeepEqual(again, e) {
				t.Fatalf("audit entry round trip: %v\n %+v\n %+v", err, e, again)
			}
		}
	})
}

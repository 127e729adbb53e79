package config

import (
	"errors"
	"time"
)

// Handles bounds what brokerd keeps for grants with result = "handle"
// (DESIGN.md section 15), per session.
type Handles struct {
	MaxPerSession   int `toml:"max_per_session"`   // handles one session may hold
	MaxSessionBytes int `toml:"max_session_bytes"` // their content together
}

// Inspect is the quarantined model request of the inspect tool.
type Inspect struct {
	// MaxQuestions is how many questions one handle answers, and one
	// content in a session, whichever handles hold it: reading the same
	// data again gives a new handle but no new questions.
	MaxQuestions int `toml:"max_questions"`
	// MaxDeclassifiedBits bounds the bits a session takes out of data above
	// an answer's class through declassified answers, all contents
	// together: a bool is 1, an enum of n values log2(n), an integer of
	// n values log2(n), each rounded up.
	MaxDeclassifiedBits int `toml:"max_declassified_bits"`
	// Slot is the llama-server slot inspectd asks on, which inferproxy
	// refuses to loopd; -1 (the default) is the server's last slot, from
	// GET /props. ReservedSlot says which it is on a given server.
	Slot int `toml:"slot"`
	// Timeout bounds one question, from brokerd's request to the answer.
	Timeout Duration `toml:"timeout"`
}

// DefaultHandles and DefaultInspect are the tables' defaults.
func DefaultHandles() Handles { return Handles{MaxPerSession: 256, MaxSessionBytes: 16 << 20} }

func DefaultInspect() Inspect {
	return Inspect{MaxQuestions: 3, MaxDeclassifiedBits: 32, Slot: -1, Timeout: Dur(2 * time.Minute)}
}

// Check reports what is wrong with h, naming the key.
func (h Handles) Check() error {
	if h.MaxPerSession < 1 || h.MaxSessionBytes < 1 {
		return errors.New("handles.max_per_session and handles.max_session_bytes must be at least 1")
	}
	return nil
}

// Check reports what is wrong with i, naming the key.
func (i Inspect) Check() error {
	switch {
	case i.MaxQuestions < 1:
		return errors.New("inspect.max_questions must be at least 1")
	case i.MaxDeclassifiedBits < 0:
		return errors.New("inspect.max_declassified_bits must be 0 (no declassified answer) or more")
	case i.Slot < -1:
		return errors.New("inspect.slot must be a slot id (0 and up), or -1 for the server's last slot")
	case i.Timeout.D() < time.Second:
		return errors.New("inspect.timeout must be at least 1s")
	}
	return nil
}

// ReservedSlot is the slot inspect asks on, of a server with total slots:
// inspectd asks there and nowhere else, inferproxy refuses it to loopd and
// loopd gives it to no session (issue 23). ok is false when the server
// cannot keep a slot apart, having fewer than two, or when the configured
// slot is not among them (llama-server would wrap it onto another): then
// inspect asks nothing and loopd may use every slot.
func (i Inspect) ReservedSlot(total int) (slot int, ok bool) {
	slot = i.Slot
	if slot < 0 {
		slot = total - 1
	}
	if total < 2 || slot >= total {
		return 0, false
	}
	return slot, true
}

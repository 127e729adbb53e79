package config

import (
	"errors"
	"time"
)

// Loop is loopd's own behaviour: when a session compacts, and how long and
// how far one turn may run.
type Loop struct {
	// CompactAt is the share of the model's context (n_ctx from /props) that
	// a session's next prompt may fill before loopd asks for a summary and
	// starts the next epoch.
	CompactAt float64 `toml:"compact_at"`
	// SummaryTokens caps the reply to the summary request (max_tokens).
	SummaryTokens int `toml:"summary_tokens"`
	// MaxSteps caps the model requests in one turn, so that a model that
	// keeps calling tools cannot run forever.
	MaxSteps int `toml:"max_steps"`
	// RequestTimeout bounds one model request, its whole stream included.
	RequestTimeout Duration `toml:"request_timeout"`
}

// DefaultLoop is the [loop] table's defaults.
func DefaultLoop() Loop {
	return Loop{CompactAt: 0.75, SummaryTokens: 1024, MaxSteps: 25, RequestTimeout: Dur(10 * time.Minute)}
}

// Check reports what is wrong with l, naming the key.
func (l Loop) Check() error {
	switch {
	case !(l.CompactAt > 0 && l.CompactAt < 1):
		return errors.New("loop.compact_at must lie between 0 and 1 (a share of the model's context)")
	case l.SummaryTokens <= 0:
		return errors.New("loop.summary_tokens must be positive")
	case l.MaxSteps <= 0:
		return errors.New("loop.max_steps must be positive")
	case l.RequestTimeout.D() < time.Second:
		// A bare TOML integer decodes as nanoseconds; no model answers that fast.
		return errors.New("loop.request_timeout must be at least 1s (write it as a string such as \"10m\")")
	}
	return nil
}

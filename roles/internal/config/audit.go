package config

import (
	"errors"
	"time"
)

// Audit is how brokerd checkpoints its audit log (DESIGN.md section 14).
type Audit struct {
	// A signed checkpoint of the chain's head after this many new records,
	CheckpointRecords uint64 `toml:"checkpoint_records"`
	// or after this long with new records, whichever comes first.
	CheckpointInterval Duration `toml:"checkpoint_interval"`
}

// DefaultAudit is the [audit] table's defaults.
func DefaultAudit() Audit {
	return Audit{CheckpointRecords: 1000, CheckpointInterval: Dur(60 * time.Second)}
}

// Check reports what is wrong with a, naming the key.
func (a Audit) Check() error {
	switch {
	case a.CheckpointRecords == 0:
		return errors.New("audit.checkpoint_records must be at least 1")
	case a.CheckpointInterval.D() < time.Second:
		return errors.New("audit.checkpoint_interval must be at least 1s")
	}
	return nil
}

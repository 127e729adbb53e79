package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"

	"golang.org/x/mod/sumdb/note"
)

// checkpointFiles writes signed checkpoints of the given seqs (hash filled
// with fill) into dir's checkpoints.jsonl, and the key beside them as name.
func checkpointFiles(t *testing.T, dir, keyName string, signer note.Signer, vkey string, fill byte, at time.Time, seqs ...uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, seq := range seqs {
		ts, _ := wire.TimestampOf(at.Add(time.Duration(seq) * time.Minute))
		_, line, err := audit.SignCheckpoint(audit.Checkpoint{Origin: "x/boxmaker-audit", Seq: seq, Root: wire.Hash32{fill, byte(seq)}, Time: ts,
			End: audit.Position{File: "2026-12-01.jsonl", Offset: int64(seq), Line: int(seq)}}, signer)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, line...)
	}
	os.WriteFile(filepath.Join(dir, audit.CheckpointsName), data, 0o600)
	os.WriteFile(filepath.Join(dir, keyName), []byte(vkey+"\n"), 0o600)
}

// status says how far the witness lags behind brokerd's newest checkpoint,
// in records and time, and when the two differ.
func TestStatusShowsTheWitnessLag(t *testing.T) {
	skey, vkey, _ := note.GenerateKey(nil, "boxmaker-audit")
	signer, _ := note.NewSigner(skey)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := at.Add(time.Hour)
	home := config.Paths{Home: t.TempDir()}
	if got := witnessLine(home, config.DefaultAudit(), now); got != "" {
		t.Errorf("no checkpoints yet: %q, want no line", got)
	}
	checkpointFiles(t, home.Join("audit"), audit.VerifierKeyName, signer, vkey, 1, at, 5, 9)
	for _, c := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"no witness", func() {}, "audit witness: holds no checkpoint; brokerd's newest is seq 9, signed 51m0s ago"},
		{"behind", func() { checkpointFiles(t, home.Join("witness"), audit.WitnessKeyName, signer, vkey, 1, at, 5) },
			"audit witness: LAGS by 4 records and 4m0s: it holds seq 5 (signed 55m0s ago), brokerd's newest is seq 9 (signed 51m0s ago)"},
		{"caught up", func() { checkpointFiles(t, home.Join("witness"), audit.WitnessKeyName, signer, vkey, 1, at, 5, 9) },
			"audit witness: up to date at seq 9, signed 51m0s ago"},
		{"differs", func() { checkpointFiles(t, home.Join("witness"), audit.WitnessKeyName, signer, vkey, 2, at, 9) },
			"audit witness: DIFFERS: it holds seq 9 with hash 0209"},
	} {
		c.setup()
		if got := witnessLine(home, config.DefaultAudit(), now); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

package brokerd

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"
	"boxmaker/roles/internal/config"

	"golang.org/x/mod/sumdb/note"
)

// The checkpoint key lives in broker/, brokerd's own directory, never in a
// sandbox's mounts; its verifier key is copied beside the log so that the
// owner's `boxmaker audit verify` can check signatures without reading
// broker/. The newest checkpoint is mirrored in broker/ too, so that a
// deleted audit/ directory is noticed at the next start.
const (
	keyName    = "checkpoint.key"  // the signer key, then the verifier key, a line each
	mirrorName = "checkpoint.last" // the newest signed checkpoint
	keyOwner   = "boxmaker-audit"  // the key's name in every signature
)

// openAudit opens the audit log in dir with checkpoints signed by brokerd's
// key, making the key at first start.
// Each checkpoint, once durable, is queued for the witness.
func openAudit(paths config.Paths, cfg config.Config, dir string, witness *witnessClient, opts ...audit.Option) (*audit.Writer, error) {
	brokerDir := paths.Join("broker")
	signer, verifier, vkey, err := loadKey(filepath.Join(brokerDir, keyName))
	if err != nil {
		return nil, err
	}
	if err := writeVerifierKey(filepath.Join(dir, audit.VerifierKeyName), vkey); err != nil {
		return nil, err
	}
	cp := audit.CheckpointConfig{Signer: signer, Verifier: verifier, Origin: audit.OriginOf(paths.Home),
		Records: cfg.Audit.CheckpointRecords, Interval: cfg.Audit.CheckpointInterval.D(), Mirror: filepath.Join(brokerDir, mirrorName),
		Signed: witness.signed}
	witness.key = vkey
	return audit.Open(dir, append(opts, audit.WithCheckpoints(cp))...)
}

// loadKey reads the key file, making it when it does not exist yet.
func loadKey(path string) (note.Signer, note.Verifier, string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = makeKey(path)
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("checkpoint key: %w", err)
	}
	skey, vkey, ok := strings.Cut(strings.TrimSuffix(string(data), "\n"), "\n")
	signer, err := note.NewSigner(skey)
	if err != nil || !ok {
		return nil, nil, "", fmt.Errorf("checkpoint key %s: want a signer key and a verifier key, a line each: %v", path, err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil || verifier.KeyHash() != signer.KeyHash() || verifier.Name() != signer.Name() {
		return nil, nil, "", fmt.Errorf("checkpoint key %s: the verifier key is not the signer's: %v", path, err)
	}
	return signer, verifier, vkey, nil
}

// makeKey makes an Ed25519 key and writes it durably, readable by brokerd
// alone, before any checkpoint relies on it.
func makeKey(path string) ([]byte, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, keyOwner)
	if err != nil {
		return nil, err
	}
	data := []byte(skey + "\n" + vkey + "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := writeDurably(path, data); err != nil { // 0600, from os.CreateTemp
		return nil, err
	}
	return data, nil
}

// writeVerifierKey puts vkey beside the log unless it is there already.
func writeVerifierKey(path, vkey string) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == vkey+"\n" {
		return nil
	}
	err := writeDurably(path, []byte(vkey+"\n"))
	if err == nil {
		err = os.Chmod(path, 0o640) // group-readable like the day files, for the owner's verify
	}
	if err != nil {
		return fmt.Errorf("checkpoint verifier key: %w", err)
	}
	return nil
}

package checkpoints

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/config"

	"golang.org/x/mod/sumdb/note"
)

// The checkpoint key lives in broker/, brokerd's own directory, never in a
// sandbox's mounts; its verifier key is copied beside the log so that the
// owner's `boxmaker audit verify` can check signatures without reading
// broker/. The newest checkpoint is mirrored in broker/ too, so that a
// deleted audit/ directory is noticed at the next start.
const (
	KeyName    = "checkpoint.key"  // the signer key, its verifier key, then earlier names' verifier keys, a line each
	MirrorName = "checkpoint.last" // the newest signed checkpoint
)

// Open opens the audit log in dir with checkpoints signed by brokerd's
// key, named like the log's origin, making the key at first start and
// renaming the key of a home made before the origin existed (a Legacy
// checkpoint's key "boxmaker-audit": the same key, so that the witness
// knows it, under the origin's name; the old verifier key stays beside the
// log, for the Legacy checkpoints). Each checkpoint, once durable, is
// queued for the witness.
func Open(paths config.Paths, cfg config.Config, dir string, witness *Witness, opts ...audit.Option) (*audit.Writer, error) {
	brokerDir := paths.Join("broker")
	origin, err := audit.LoadOrigin(paths.Home)
	if err != nil {
		return nil, err
	}
	k, err := loadKey(filepath.Join(brokerDir, KeyName), origin)
	if err != nil {
		return nil, err
	}
	if err := writeVerifierKey(filepath.Join(dir, audit.VerifierKeyName), k.vkeys()); err != nil {
		return nil, err
	}
	cp := audit.CheckpointConfig{Signer: k.signer, Verifier: k.verifiers, Origin: origin,
		Records: cfg.Audit.CheckpointRecords, Interval: cfg.Audit.CheckpointInterval.D(), Mirror: filepath.Join(brokerDir, MirrorName),
		Signed: witness.signed}
	witness.key = k.vkey
	w, err := audit.Open(dir, append(opts, audit.WithCheckpoints(cp))...)
	if err == nil {
		witness.tree = w
	}
	return w, err
}

// checkpointKey is brokerd's key: the signer, its verifier key, and the
// verifier keys it had under earlier names.
type checkpointKey struct {
	signer    note.Signer
	vkey      string
	older     []string
	verifiers note.Verifiers
}

func (k checkpointKey) vkeys() []string { return append([]string{k.vkey}, k.older...) }

// loadKey reads the key file (the signer key, its verifier key, then any
// earlier names' verifier keys, a line each), making it when it does not
// exist yet and renaming it when it is not named origin.
func loadKey(path, origin string) (checkpointKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = makeKey(path, origin)
	}
	if err != nil {
		return checkpointKey{}, fmt.Errorf("checkpoint key: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return checkpointKey{}, fmt.Errorf("checkpoint key %s: want a signer key and a verifier key, a line each", path)
	}
	if signer, err := note.NewSigner(lines[0]); err == nil && signer.Name() != origin {
		if lines, err = renameKey(path, lines, origin); err != nil {
			return checkpointKey{}, fmt.Errorf("checkpoint key %s: %w", path, err)
		}
	}
	return parseKey(path, lines)
}

func parseKey(path string, lines []string) (checkpointKey, error) {
	signer, err := note.NewSigner(lines[0])
	if err != nil {
		return checkpointKey{}, fmt.Errorf("checkpoint key %s: %v", path, err)
	}
	var vs []note.Verifier
	for i, vkey := range lines[1:] {
		v, err := note.NewVerifier(vkey)
		if err != nil || i == 0 && (v.KeyHash() != signer.KeyHash() || v.Name() != signer.Name()) {
			return checkpointKey{}, fmt.Errorf("checkpoint key %s: the verifier key is not the signer's: %v", path, err)
		}
		vs = append(vs, v)
	}
	return checkpointKey{signer: signer, vkey: lines[1], older: lines[2:], verifiers: note.VerifierList(vs...)}, nil
}

// renameKey gives the key the origin's name, keeping the old verifier key
// after the new one, and writes it durably before any checkpoint uses it.
func renameKey(path string, lines []string, origin string) ([]string, error) {
	skey, vkey, err := audit.RenameKey(lines[0], origin)
	if err != nil {
		return nil, err
	}
	out := append([]string{skey, vkey}, lines[1:]...)
	if err := writeDurably(path, []byte(strings.Join(out, "\n")+"\n")); err != nil {
		return nil, err
	}
	return out, nil
}

// makeKey makes an Ed25519 key named origin and writes it durably,
// readable by brokerd alone, before any checkpoint relies on it.
func makeKey(path, origin string) ([]byte, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
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

// writeVerifierKey puts the verifier keys beside the log unless they are
// there already.
func writeVerifierKey(path string, vkeys []string) error {
	text := strings.Join(vkeys, "\n") + "\n"
	if old, err := os.ReadFile(path); err == nil && string(old) == text {
		return nil
	}
	err := writeDurably(path, []byte(text))
	if err == nil {
		err = os.Chmod(path, 0o640) // group-readable like the day files, for the owner's verify
	}
	if err != nil {
		return fmt.Errorf("checkpoint verifier key: %w", err)
	}
	return nil
}

// writeDurably replaces path with data, readable by brokerd alone, so that
// a crash leaves the old or the new content, never a mix.
func writeDurably(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600)
}

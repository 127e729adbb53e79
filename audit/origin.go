package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NameFile is the file in the home that holds the log's name, chosen at
// `boxmaker init` and kept there: the origin of every checkpoint is the
// name followed by OriginSuffix, the same wherever the home is moved.
const NameFile = "audit-name"

// LoadOrigin is the origin of the checkpoints of the log under home, the
// same for brokerd, which signs them, the witness, which cosigns them, and
// the owner's tools. A home made before the name existed has no NameFile;
// its name is then the host's (DefaultName), which `boxmaker audit rebase`
// or a new `init` keeps in the file.
func LoadOrigin(home string) (string, error) {
	data, err := os.ReadFile(filepath.Join(home, NameFile))
	name := strings.TrimSpace(string(data))
	switch {
	case errors.Is(err, os.ErrNotExist):
		name = DefaultName()
	case err != nil:
		return "", fmt.Errorf("audit: %w", err)
	}
	if !ValidName(name) {
		return "", fmt.Errorf("audit: %s: %q is not a log name (letters, digits, dots and hyphens)", filepath.Join(home, NameFile), name)
	}
	return name + OriginSuffix, nil
}

// ValidName: 1 to 64 of a-z, 0-9, '.', '-', starting with a letter or a
// digit; no spaces, so that the origin is one C2SP origin line and a key
// name.
func ValidName(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '.' || name[0] == '-' {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-')
	}) < 0
}

// DefaultName is the host's name as a log name, or "boxmaker".
func DefaultName() string {
	h, _ := os.Hostname()
	h = strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return -1
	}, h)
	h = strings.TrimLeft(h, ".-")
	if len(h) > 40 {
		h = h[:40]
	}
	if !ValidName(h) {
		return "boxmaker"
	}
	return h
}

// NewName is a name for a new log: the host's, then 8 random hex digits,
// so that two homes on one host have two origins.
func NewName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return DefaultName() + "-" + hex.EncodeToString(b)
}

// RenameKey returns the note signer key skey under another name, with its
// verifier key: the same Ed25519 key, so that whoever pinned the old
// verifier key can tell the renamed one is the same (SameKey).
func RenameKey(skey, name string) (string, string, error) {
	parts := strings.SplitN(skey, "+", 5) // the key's base64 may hold '+'
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" || !validKeyName(name) {
		return "", "", errors.New("audit: not a note signer key, or not a key name")
	}
	key, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(key) != 1+ed25519.SeedSize || key[0] != 1 {
		return "", "", errors.New("audit: not an Ed25519 note signer key")
	}
	pub := append([]byte{1}, ed25519.NewKeyFromSeed(key[1:]).Public().(ed25519.PublicKey)...)
	h := sha256.Sum256(append([]byte(name+"\n"), pub...))
	hash := binary.BigEndian.Uint32(h[:4])
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, hash, parts[4]),
		fmt.Sprintf("%s+%08x+%s", name, hash, base64.StdEncoding.EncodeToString(pub)), nil
}

// SameKey reports whether two verifier keys hold the same public key,
// whatever their names.
func SameKey(a, b string) bool {
	ka, kb := keyPart(a), keyPart(b)
	return ka != "" && ka == kb
}

// keyPart is the base64 key of "name+hash+key", which may hold '+' too.
func keyPart(vkey string) string {
	_, rest, ok1 := strings.Cut(vkey, "+")
	_, key, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 {
		return ""
	}
	return key
}

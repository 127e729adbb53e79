package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Cosignatures (C2SP tlog-cosignature, cosignature/v1): a witness signs
// "cosignature/v1\ntime T\n" followed by the checkpoint's body with its own
// Ed25519 key, T being the Unix seconds of signing, and adds the signature
// to the note as a line of its own whose bytes are the key ID (the first 4
// bytes of SHA-256 of the name, a newline, 0x04 and the public key), T as 8
// bytes big-endian, then the 64-byte signature. The key ID has signature
// type 0x04, so a cosignature key is never mistaken for a note key (0x01).
// golang.org/x/mod/sumdb/note signs and checks notes with any Signer and
// Verifier, so these are two small ones; the test against torchwood and
// transparency-dev/formats checks that they agree with the ecosystem.

const cosignatureType = 0x04

// cosignatureHeader begins the message a cosignature signs.
const cosignatureHeader = "cosignature/v1\ntime "

// NewCosigner is the witness's signer for cosignatures with the key seed
// and name; now gives the time each signs.
func NewCosigner(name string, key ed25519.PrivateKey, now func() time.Time) (note.Signer, error) {
	if !validKeyName(name) {
		return nil, fmt.Errorf("audit: %q is not a key name", name)
	}
	pub := key.Public().(ed25519.PublicKey)
	return &cosigner{name: name, hash: cosignKeyHash(name, pub), key: key, now: now}, nil
}

// CosignVerifierKey is the verifier key of a cosignature key, the
// vkey form ("name+hash+base64(0x04 || public key)").
func CosignVerifierKey(name string, pub ed25519.PublicKey) string {
	return fmt.Sprintf("%s+%08x+%s", name, cosignKeyHash(name, pub), base64.StdEncoding.EncodeToString(append([]byte{cosignatureType}, pub...)))
}

// NewCosignVerifier reads a verifier key written by CosignVerifierKey.
func NewCosignVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hashText, keyText, ok2 := strings.Cut(rest, "+")
	h, err := strconv.ParseUint(hashText, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(keyText)
	switch {
	case !ok1 || !ok2 || err != nil || err2 != nil || !validKeyName(name) || len(hashText) != 8:
		return nil, fmt.Errorf("audit: malformed cosignature verifier key %q", vkey)
	case len(key) != 1+ed25519.PublicKeySize || key[0] != cosignatureType:
		return nil, fmt.Errorf("audit: %q is not an Ed25519 cosignature/v1 key", vkey)
	}
	pub := ed25519.PublicKey(key[1:])
	if uint32(h) != cosignKeyHash(name, pub) {
		return nil, fmt.Errorf("audit: cosignature verifier key %q: its hash is not its key's", vkey)
	}
	return &cosignVerifier{name: name, hash: uint32(h), pub: pub}, nil
}

// CosignTime is the time a cosignature line's signature (base64, as in
// note.Signature.Base64) says it was made.
func CosignTime(sigBase64 string) (time.Time, error) {
	sig, err := base64.StdEncoding.DecodeString(sigBase64)
	if err != nil || len(sig) != 4+8+ed25519.SignatureSize {
		return time.Time{}, errors.New("audit: not a cosignature/v1 signature")
	}
	return time.Unix(int64(binary.BigEndian.Uint64(sig[4:12])), 0).UTC(), nil
}

func cosignKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{cosignatureType})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// validKeyName is note's rule for key names: non-empty, no spaces, no
// plus signs, printable.
func validKeyName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "+ \t\n") && strings.IndexFunc(name, func(r rune) bool { return r < 0x21 || r == 0x7f }) < 0
}

func cosignedMessage(t uint64, text []byte) []byte {
	return append([]byte(cosignatureHeader+strconv.FormatUint(t, 10)+"\n"), text...)
}

type cosigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
	now  func() time.Time
}

func (s *cosigner) Name() string    { return s.name }
func (s *cosigner) KeyHash() uint32 { return s.hash }

func (s *cosigner) Sign(text []byte) ([]byte, error) {
	t := uint64(s.now().Unix())
	sig := binary.BigEndian.AppendUint64(nil, t)
	return append(sig, ed25519.Sign(s.key, cosignedMessage(t, text))...), nil
}

type cosignVerifier struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
}

func (v *cosignVerifier) Name() string    { return v.name }
func (v *cosignVerifier) KeyHash() uint32 { return v.hash }

func (v *cosignVerifier) Verify(text, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(v.pub, cosignedMessage(binary.BigEndian.Uint64(sig[:8]), text), sig[8:])
}

// Cosign adds signer's cosignature to msg, a note that v checks; of msg's
// signatures it keeps those v checks.
func Cosign(msg []byte, v note.Verifiers, signer note.Signer) ([]byte, error) {
	n, err := note.Open(msg, v)
	if err != nil {
		return nil, err
	}
	return note.Sign(n, signer)
}

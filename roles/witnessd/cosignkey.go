package witnessd

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/atomicfile"

	"golang.org/x/mod/sumdb/note"
)

// The witness's own key: an Ed25519 seed in witness/cosign.key, mode 0600
// in a directory of witnessd's uid (0700), so brokerd can never read it,
// made when witnessd first starts on the home (which the install's first
// start of the units is), with its verifier key in cosign.pub for the
// owner's tools.
const cosignKeyName = "cosign.key"

// cosignName is the witness key's name: the log's name, then
// "/boxmaker-witness".
func cosignName(origin string) string {
	return strings.TrimSuffix(origin, audit.OriginSuffix) + "/boxmaker-witness"
}

// loadCosigner reads the witness's key, making it when it does not exist;
// now is the clock its cosignatures' times come from.
func loadCosigner(dir, origin string, now func() time.Time, logf func(string, ...any)) (note.Signer, error) {
	path := filepath.Join(dir, cosignKeyName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = makeCosignKey(dir, origin)
		if err == nil {
			logf("made the witness's cosignature key (kept in %s)", path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("witnessd: cosignature key: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("witnessd: %s is not an Ed25519 seed", path)
	}
	return audit.NewCosigner(cosignName(origin), ed25519.NewKeyFromSeed(seed), now)
}

func makeCosignKey(dir, origin string) ([]byte, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	data := []byte(base64.StdEncoding.EncodeToString(priv.Seed()) + "\n")
	if err := atomicfile.Write(filepath.Join(dir, cosignKeyName), data, 0o600); err != nil {
		return nil, err
	}
	vkey := audit.CosignVerifierKey(cosignName(origin), pub)
	if err := atomicfile.Write(filepath.Join(dir, audit.WitnessCosignKeyName), []byte(vkey+"\n"), 0o644); err != nil {
		return nil, err
	}
	return data, nil
}

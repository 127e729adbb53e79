package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/units"
)

// Read reads brokerd's own copy of the secret name, from the first
// of these that exists:
//   - $CREDENTIALS_DIRECTORY, where systemd's LoadCredential put the
//     secrets brokerd's unit names;
//   - units.CredentialDir, where `up` as root copied them;
//   - secrets/ itself, which only a development home, where every role
//     runs as one uid, lets brokerd read.
//
// A copy directory is authoritative: a secret missing from it was not
// given to brokerd, and secrets/ is not tried. The file is opened itself,
// never through a link, and must be a regular file. Errors never hold the
// value.
func Read(paths config.Paths, name string) (string, error) {
	if err := units.CheckSecretName(name); err != nil {
		return "", err
	}
	dir, copies := os.Getenv("CREDENTIALS_DIRECTORY"), true
	if dir == "" {
		dir = units.CredentialDir(paths.Home, "brokerd")
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			dir, copies = paths.Secrets, false
		}
	}
	path := filepath.Join(dir, name)
	data, err := config.ReadSecretFile(path)
	if copies && errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("brokerd was started without it (a grant added since names it): " +
			"run install again (or restart up), then restart brokerd")
	}
	if err != nil {
		return "", err
	}
	value := strings.TrimRight(string(data), "\r\n")
	if value == "" {
		// systemd's fallback for a credential it could not load is one
		// newline (roles/internal/units/secrets.go).
		return "", fmt.Errorf("%s is empty: the secret was not in %s when brokerd started; put it there and restart brokerd", path, paths.Secrets)
	}
	return value, nil
}

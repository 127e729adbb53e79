package gatewayd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/roles/internal/config"
)

// ReadToken reads the bot token from the file named name: in
// $CREDENTIALS_DIRECTORY, gatewayd's own copy (systemd's LoadCredential, or
// what `up` as root made for it), else in the secrets directory, which
// only a development home, where every role runs as one uid, lets it read.
// The file is opened itself, never through a link, and must be a regular
// file. Errors name the file, never its content.
func ReadToken(secretsDir, name string) (string, error) {
	if strings.ContainsAny(name, `/\`) || name == "" || name == "." || name == ".." {
		return "", fmt.Errorf("token_secret %q must be a file name", name)
	}
	path := filepath.Join(secretsDir, name)
	if dir := os.Getenv("CREDENTIALS_DIRECTORY"); dir != "" {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			path = filepath.Join(dir, name)
		}
	}
	data, err := config.ReadSecretFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the bot token file %s does not exist; put the token there (see the README, \"Connecting a Mattermost bot\")", path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the bot token: %w", err)
	}
	token := strings.TrimRight(string(data), "\r\n")
	if token == "" {
		// systemd's fallback for a credential it could not load is one
		// newline (roles/internal/units/secrets.go).
		return "", fmt.Errorf("the bot token file %s is empty: the token was not in the secrets directory when gatewayd started; "+
			"put it there and restart gatewayd", path)
	}
	if strings.IndexFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", fmt.Errorf("the bot token file %s must hold the token alone, on one line", path)
	}
	return token, nil
}

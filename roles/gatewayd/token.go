package gatewayd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadToken reads the bot token from the file named name: in
// $CREDENTIALS_DIRECTORY when systemd's LoadCredential put it there, else
// in the secrets directory. Errors name the file, never its content.
func ReadToken(secretsDir, name string) (string, error) {
	if strings.ContainsAny(name, `/\`) || name == "" || name == "." || name == ".." {
		return "", fmt.Errorf("token_secret %q must be a file name", name)
	}
	path := filepath.Join(secretsDir, name)
	if dir := os.Getenv("CREDENTIALS_DIRECTORY"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			path = filepath.Join(dir, name)
		}
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the bot token file %s does not exist; put the token there (see the README, \"Connecting a Mattermost bot\")", path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the bot token: %w", err)
	}
	token := strings.TrimRight(string(data), "\r\n")
	if token == "" || strings.IndexFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", fmt.Errorf("the bot token file %s must hold the token alone, on one line", path)
	}
	return token, nil
}

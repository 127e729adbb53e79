package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxSecretBytes bounds a secret file: a token or a key, never a document.
const MaxSecretBytes = 64 << 10

// ReadSecretFile reads one secret file: the file itself, never a link to
// one (O_NOFOLLOW), and only a regular file, since a FIFO or a device could
// block or feed up anything. Every role that reads a secret reads it here.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link; a secret must be a regular file", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretBytes+1))
	if err == nil && len(data) > MaxSecretBytes {
		err = fmt.Errorf("%s is over %d bytes; a secret file holds one token or key", path, MaxSecretBytes)
	}
	return data, err
}

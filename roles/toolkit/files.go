package toolkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// fileRead reads an absolute path; brokerd mounted the granted paths at
// their own paths, so the path means the same inside as on the host.
func (t *tools) fileRead(_ context.Context, a wire.FileReadArgs) toolrun.Output {
	if !filepath.IsAbs(a.Path) {
		return failed("file_read", "%q is not an absolute path", a.Path)
	}
	text, err := readText(filepath.Clean(a.Path), 0, t.job.Limits.OutputBytes)
	if err != nil {
		return failed("file_read", "%v", err)
	}
	return succeeded(text)
}

// readText reads a regular text file, at most limit bytes and one more so
// that encodeFitted can say the rest was cut. flags adds to O_RDONLY;
// O_NONBLOCK keeps a FIFO planted in a grant from hanging the run.
func readText(path string, flags int, limit int64) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flags, 0)
	if errors.Is(err, syscall.ELOOP) && flags&syscall.O_NOFOLLOW != 0 {
		return "", fmt.Errorf("%s is a symbolic link, which notes never follow", path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file", path)
	}
	return string(data), nil
}

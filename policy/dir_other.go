//go:build !linux

package policy

import (
	"errors"
	"os"
)

// dirID is unused without inotify: every Load reads every file.
type dirID struct{}

func statDir(path string) (dirID, error) {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		err = &os.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	return dirID{}, err
}

type watch struct{}

func newWatch(string) (*watch, error) {
	return nil, errors.New("no inotify on this system, so every call reads every grant file")
}

func (*watch) drain() (changed, ended bool) { return true, true }
func (*watch) close()                       {}

func otherLinks(os.FileInfo) bool { return true }

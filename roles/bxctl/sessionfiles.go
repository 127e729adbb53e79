package bxctl

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"boxmaker/roles/internal/nofollow"
	"boxmaker/wire"

	"golang.org/x/sys/unix"
)

// maxEpochFile bounds what is read of one epoch file when loopd is down: a
// compromised loopd's file costs bxctl no more than this.
const maxEpochFile = 256 << 20

// readSessions lists the sessions under the home's sessions/ as loopd's
// session_list would (created sessions, most recently active first), for
// when loopd is down. sessions/ is loopd's to write: bxctl may run as root,
// so every open below the home is made without following a link (nofollow)
// and beneath the directory opened before it, a FIFO does not block, and
// anything but a regular file or directory is passed over. A session whose
// files do not read is left out, as loopd leaves it out, and named in
// skipped.
func readSessions(home string) (list []wire.SessionInfo, skipped []string, err error) {
	homeFD, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) // the owner's path, not a role's
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: home, Err: err}
	}
	defer unix.Close(homeFD)
	dir, err := openBeneath(homeFD, "sessions", unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return []wire.SessionInfo{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s/sessions: %w", home, err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, nil, err
	}
	list = []wire.SessionInfo{}
	for _, name := range names {
		id, err := wire.ParseSessionID(name)
		if err != nil {
			continue
		}
		info, err := readSessionDir(int(dir.Fd()), id)
		switch {
		case errors.Is(err, errNoEpochFile):
		case err != nil:
			skipped = append(skipped, fmt.Sprintf("session %s is left out: %v", id, err))
		default:
			list = append(list, info)
		}
	}
	slices.SortFunc(list, func(a, b wire.SessionInfo) int {
		return cmp.Or(cmp.Compare(b.Updated, a.Updated), cmp.Compare(a.Session.String(), b.Session.String()))
	})
	return list, skipped, nil
}

// errNoEpochFile: a directory without a whole epoch, a creation cut short
// (loopd does not list it either).
var errNoEpochFile = errors.New("no epoch file")

// openBeneath opens name in dirFD without following a link, read-only and
// non-blocking.
func openBeneath(dirFD int, name string, flags int) (*os.File, error) {
	fd, err := nofollow.Open(dirFD, name, &unix.OpenHow{
		Flags:   uint64(unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | flags),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readSessionDir is one session's SessionInfo from its epoch files, read as
// loopd's scan reads them: turns counted over every epoch, the latest
// epoch with a whole line, a torn line only at the end of the latest.
func readSessionDir(parent int, id wire.SessionID) (wire.SessionInfo, error) {
	d, err := openBeneath(parent, id.String(), unix.O_DIRECTORY)
	if err != nil {
		return wire.SessionInfo{}, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return wire.SessionInfo{}, err
	}
	info := wire.SessionInfo{Session: id}
	for _, e := range epochNumbers(names) {
		n, updated, records, err := readEpochFile(int(d.Fd()), id.String(), e)
		if err != nil {
			return info, err
		}
		if records == 0 {
			continue // a crash cut the epoch's creation short
		}
		info.Epoch, info.Turns, info.Updated = e, info.Turns+n, max(info.Updated, updated)
	}
	if info.Epoch == 0 {
		return info, errNoEpochFile
	}
	return info, nil
}

// epochNumbers are the epochs named N.jsonl among names, in order.
func epochNumbers(names []string) []wire.Epoch {
	var out []wire.Epoch
	for _, name := range names {
		num, ok := strings.CutSuffix(name, ".jsonl")
		n, err := strconv.ParseUint(num, 10, 32)
		if ok && err == nil && n > 0 && strconv.FormatUint(n, 10) == num {
			out = append(out, wire.Epoch(n))
		}
	}
	slices.Sort(out)
	return out
}

// readEpochFile counts an epoch's user records and finds its latest time,
// decoding each whole line strictly; a last line without its newline is a
// torn write, and not counted.
func readEpochFile(dirFD int, session string, e wire.Epoch) (turns uint64, updated wire.Timestamp, records int, err error) {
	name := fmt.Sprintf("%d.jsonl", e)
	f, err := openBeneath(dirFD, name, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, 0, 0, fmt.Errorf("%s is not a regular file", name)
	}
	r := bufio.NewReader(io.LimitReader(f, maxEpochFile))
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return turns, updated, records, nil // a torn line, or none
		}
		if err != nil {
			return 0, 0, 0, err
		}
		rec, err := wire.DecodeLogRecord(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		if start, ok := rec.(wire.SessionStart); records == 0 && (!ok || start.Epoch != e || start.Session.String() != session) {
			return 0, 0, 0, fmt.Errorf("%s does not begin with session_start for session %s epoch %d", name, session, e)
		}
		records++
		if _, ok := rec.(wire.User); ok {
			turns++
		}
		updated = max(updated, wire.RecordTime(rec))
	}
}

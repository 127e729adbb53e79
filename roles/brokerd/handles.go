package brokerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"boxmaker/policy"
	"boxmaker/roles/internal/atomicfile"
	"boxmaker/roles/internal/config"
	"boxmaker/wire"
)

// handleStore keeps the results of grants with result = "handle"
// (DESIGN.md section 15) in broker/handles/<session>/h<N>, one file each
// with its label, so that they outlive a restart and no sandbox can mount
// them (broker/ is on the refused list). Handles are per session: a
// session can name only its own, so another session's h1 is unknown to it.
type handleStore struct {
	dir    string
	limits config.Handles
	mu     sync.Mutex // one writer at a time: numbering and the bounds read the directory
}

// storedHandle is one handle's file: its label, how many questions it has
// answered, and its content.
type storedHandle struct {
	Tool      string         `json:"tool"`
	Class     wire.DataClass `json:"class"`
	Untrusted bool           `json:"untrusted"`
	Questions uint64         `json:"questions"`
	Content   string         `json:"content"`
}

func (h storedHandle) ref(name string) wire.HandleRef {
	return wire.HandleRef{Handle: name, Tool: h.Tool, Class: h.Class, Untrusted: h.Untrusted, Bytes: uint64(len(h.Content))}
}

// errHandleLimit is a store refused for its bounds; the text says which.
var errHandleLimit = errors.New("handle limit")

func openHandles(dir string, limits config.Handles) (*handleStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &handleStore{dir: dir, limits: limits}, nil
}

func (s *handleStore) sessionDir(id wire.SessionID) string { return filepath.Join(s.dir, id.String()) }

// put keeps content as the session's next handle, durably, and returns
// its reference. Over the session's bounds it keeps nothing and says which
// bound, and the key that sets it.
func (s *handleStore) put(id wire.SessionID, tool string, l taintLabel, content string) (wire.HandleRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.sessionDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return wire.HandleRef{}, err
	}
	count, last, bytes, err := s.usage(dir)
	if err != nil {
		return wire.HandleRef{}, err
	}
	switch {
	case count >= s.limits.MaxPerSession:
		return wire.HandleRef{}, fmt.Errorf("%w: the session holds %d handles already (handles.max_per_session)", errHandleLimit, count)
	case bytes+int64(len(content)) > int64(s.limits.MaxSessionBytes):
		return wire.HandleRef{}, fmt.Errorf("%w: the session's handles would hold %d bytes, over %d (handles.max_session_bytes)",
			errHandleLimit, bytes+int64(len(content)), s.limits.MaxSessionBytes)
	}
	name := "h" + strconv.Itoa(last+1)
	h := storedHandle{Tool: tool, Class: l.class, Untrusted: l.untrusted, Content: content}
	if err := s.write(dir, name, h); err != nil {
		return wire.HandleRef{}, err
	}
	return h.ref(name), nil
}

// usage counts the session's handles, the highest number among them and
// the size of their files.
func (s *handleStore) usage(dir string) (count, last int, bytes int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, e := range entries {
		if !wire.ValidHandleName(e.Name()) {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(e.Name(), "h"))
		info, err := e.Info()
		if err != nil {
			return 0, 0, 0, err
		}
		count, last, bytes = count+1, max(last, n), bytes+info.Size()
	}
	return count, last, bytes, nil
}

func (s *handleStore) write(dir, name string, h storedHandle) error {
	data, err := wire.Marshal(&h)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, name), data, 0o600)
}

// get returns the session's handle name; ok is false when it has none.
func (s *handleStore) get(id wire.SessionID, name string) (h storedHandle, ok bool, err error) {
	if !wire.ValidHandleName(name) {
		return storedHandle{}, false, nil
	}
	data, err := os.ReadFile(filepath.Join(s.sessionDir(id), name))
	if errors.Is(err, fs.ErrNotExist) {
		return storedHandle{}, false, nil
	}
	if err != nil {
		return storedHandle{}, false, err
	}
	if err := wire.Unmarshal(data, &h); err != nil || !h.Class.Valid() {
		return storedHandle{}, false, fmt.Errorf("handle %s of session %s does not parse: %v", name, id, err)
	}
	return h, true, nil
}

// load returns the session's handles among names, for policy.Decide; a
// name it does not have is left out, and Decide denies it unknown_handle.
func (s *handleStore) load(id wire.SessionID, names []string) (map[string]policy.HandleValue, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := map[string]policy.HandleValue{}
	for _, name := range names {
		h, ok, err := s.get(id, name)
		if err != nil {
			return nil, err
		}
		if ok {
			out[name] = policy.HandleValue{Class: h.Class, Untrusted: h.Untrusted, Content: h.Content}
		}
	}
	return out, nil
}

// ask counts one more question to each handle it reads (about, and every
// handle in reads: the question itself may be a handle's content) and to
// each content they hold, and the bits a declassified answer takes,
// durably, before it is asked, so that neither a crash nor a fresh handle
// to the same data gives it more than limits allow (budget.go). It returns
// the handle about.
func (s *handleStore) ask(id wire.SessionID, about string, reads []string, declassifiedBits uint64, limits config.Inspect) (storedHandle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := append([]string{about}, reads...)
	slices.Sort(names)
	names = slices.Compact(names)
	read := make([]storedHandle, len(names))
	q := question{declassifiedBits: declassifiedBits}
	for i, name := range names {
		h, ok, err := s.get(id, name)
		switch {
		case err != nil:
			return storedHandle{}, err
		case !ok:
			return storedHandle{}, fmt.Errorf("%w: the session has no handle %s", errHandleLimit, name)
		case h.Questions >= uint64(limits.MaxQuestions):
			return storedHandle{}, fmt.Errorf("%w: %s has answered its %d questions (inspect.max_questions)", errHandleLimit, name, limits.MaxQuestions)
		}
		read[i] = h
		if hash := contentHash(h.Content); !slices.Contains(q.hashes, hash) {
			q.hashes = append(q.hashes, hash)
		}
	}
	dir := s.sessionDir(id)
	budget, err := readBudget(dir)
	if err != nil {
		return storedHandle{}, err
	}
	if err := budget.spend(q, limits); err != nil {
		return storedHandle{}, err
	}
	// The budget first: a crash before the handles are written leaves it
	// counted, never uncounted.
	if err := writeBudget(dir, budget); err != nil {
		return storedHandle{}, err
	}
	var asked storedHandle
	for i, name := range names {
		read[i].Questions++
		if err := s.write(dir, name, read[i]); err != nil {
			return storedHandle{}, err
		}
		if name == about {
			asked = read[i]
		}
	}
	return asked, nil
}

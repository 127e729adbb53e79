package handles

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

// Store keeps the results of grants with result = "handle"
// (DESIGN.md section 15) in broker/handles/<session>/h<N>, one file each
// with its label, so that they outlive a restart and no sandbox can mount
// them (broker/ is on the refused list). Handles are per session: a
// session can name only its own, so another session's h1 is unknown to it.
type Store struct {
	dir    string
	limits config.Handles
	mu     sync.Mutex // one writer at a time: numbering and the bounds read the directory
}

// Handle is one handle's file: its label, how many questions it has
// answered, and its content.
type Handle struct {
	Tool      string         `json:"tool"`
	Class     wire.DataClass `json:"class"`
	Untrusted bool           `json:"untrusted"`
	Questions uint64         `json:"questions"`
	Content   string         `json:"content"`
}

// Ref is the handle's reference as a result shows it, named name.
func (h Handle) Ref(name string) wire.HandleRef {
	return wire.HandleRef{Handle: name, Tool: h.Tool, Class: h.Class, Untrusted: h.Untrusted, Bytes: uint64(len(h.Content))}
}

// ErrLimit is a store refused for its bounds; the text says which.
var ErrLimit = errors.New("handle limit")

// Open opens the store in dir (broker/handles), making it if need be.
func Open(dir string, limits config.Handles) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Store{dir: dir, limits: limits}, nil
}

func (s *Store) sessionDir(id wire.SessionID) string { return filepath.Join(s.dir, id.String()) }

// Put keeps content as the session's next handle, durably, and returns
// its reference. Over the session's bounds it keeps nothing and says which
// bound, and the key that sets it.
func (s *Store) Put(id wire.SessionID, tool string, class wire.DataClass, untrusted bool, content string) (wire.HandleRef, error) {
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
		return wire.HandleRef{}, fmt.Errorf("%w: the session holds %d handles already (handles.max_per_session)", ErrLimit, count)
	case bytes+int64(len(content)) > int64(s.limits.MaxSessionBytes):
		return wire.HandleRef{}, fmt.Errorf("%w: the session's handles would hold %d bytes, over %d (handles.max_session_bytes)",
			ErrLimit, bytes+int64(len(content)), s.limits.MaxSessionBytes)
	}
	name := "h" + strconv.Itoa(last+1)
	h := Handle{Tool: tool, Class: class, Untrusted: untrusted, Content: content}
	if err := s.write(dir, name, h); err != nil {
		return wire.HandleRef{}, err
	}
	return h.Ref(name), nil
}

// usage counts the session's handles, the highest number among them and
// the size of their files.
func (s *Store) usage(dir string) (count, last int, bytes int64, err error) {
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

func (s *Store) write(dir, name string, h Handle) error {
	data, err := wire.Marshal(&h)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, name), data, 0o600)
}

// Get returns the session's handle name; ok is false when it has none.
func (s *Store) Get(id wire.SessionID, name string) (h Handle, ok bool, err error) {
	if !wire.ValidHandleName(name) {
		return Handle{}, false, nil
	}
	data, err := os.ReadFile(filepath.Join(s.sessionDir(id), name))
	if errors.Is(err, fs.ErrNotExist) {
		return Handle{}, false, nil
	}
	if err != nil {
		return Handle{}, false, err
	}
	if err := wire.Unmarshal(data, &h); err != nil || !h.Class.Valid() {
		return Handle{}, false, fmt.Errorf("handle %s of session %s does not parse: %v", name, id, err)
	}
	return h, true, nil
}

// Load returns the session's handles among names, for policy.Decide; a
// name it does not have is left out, and Decide denies it unknown_handle.
func (s *Store) Load(id wire.SessionID, names []string) (map[string]policy.HandleValue, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := map[string]policy.HandleValue{}
	for _, name := range names {
		h, ok, err := s.Get(id, name)
		if err != nil {
			return nil, err
		}
		if ok {
			out[name] = policy.HandleValue{Class: h.Class, Untrusted: h.Untrusted, Content: h.Content}
		}
	}
	return out, nil
}

// Ask counts one more question to each handle it reads (about, and every
// handle in reads: the question itself may be a handle's content) and to
// each content they hold, and the bits a declassified answer takes,
// durably, before it is asked, so that neither a crash nor a fresh handle
// to the same data gives it more than limits allow (budget.go). It returns
// the handle about.
func (s *Store) Ask(id wire.SessionID, about string, reads []string, declassifiedBits uint64, limits config.Inspect) (Handle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := append([]string{about}, reads...)
	slices.Sort(names)
	names = slices.Compact(names)
	read := make([]Handle, len(names))
	q := question{declassifiedBits: declassifiedBits}
	for i, name := range names {
		h, ok, err := s.Get(id, name)
		switch {
		case err != nil:
			return Handle{}, err
		case !ok:
			return Handle{}, fmt.Errorf("%w: the session has no handle %s", ErrLimit, name)
		case h.Questions >= uint64(limits.MaxQuestions):
			return Handle{}, fmt.Errorf("%w: %s has answered its %d questions (inspect.max_questions)", ErrLimit, name, limits.MaxQuestions)
		}
		read[i] = h
		if hash := contentHash(h.Content); !slices.Contains(q.hashes, hash) {
			q.hashes = append(q.hashes, hash)
		}
	}
	dir := s.sessionDir(id)
	budget, err := readBudget(dir)
	if err != nil {
		return Handle{}, err
	}
	if err := budget.spend(q, limits); err != nil {
		return Handle{}, err
	}
	// The budget first: a crash before the handles are written leaves it
	// counted, never uncounted.
	if err := writeBudget(dir, budget); err != nil {
		return Handle{}, err
	}
	var asked Handle
	for i, name := range names {
		read[i].Questions++
		if err := s.write(dir, name, read[i]); err != nil {
			return Handle{}, err
		}
		if name == about {
			asked = read[i]
		}
	}
	return asked, nil
}

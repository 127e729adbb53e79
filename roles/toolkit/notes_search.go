package toolkit

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"boxmaker/roles/internal/toolrun"
	"boxmaker/wire"
)

// Bounds on notes_search: it shows the best maxHits notes in at most
// maxSearchOutput bytes, skips files over maxSearchFile bytes, and takes a
// file with a NUL in its first binarySniff bytes for binary and skips it.
const (
	maxHits         = 20
	maxSearchOutput = 16 << 10
	maxSearchFile   = 4 << 20
	binarySniff     = 8 << 10
)

// notesSearch ranks the text files of every notes entry mounted for this
// job by BM25 against the query's words and shows the best, each with its
// score and its best passage. It scans the files (there is no index):
// one pass counts the query words in each file, then only the files shown
// are read again for their passages.
func (t *tools) notesSearch(_ context.Context, a wire.NotesSearchArgs) toolrun.Output {
	q, err := parseQuery(a.Query)
	if err != nil {
		return failed("notes_search", "%v", err)
	}
	s := newNoteScan(&q)
	for _, root := range searchRoots(t.memory, t.job.Mounts) {
		if err := filepath.WalkDir(root, s.visit); err != nil {
			return failed("notes_search", "%v", t.relative(err))
		}
	}
	if len(s.hits) == 0 {
		return succeeded(fmt.Sprintf("no notes contain any word of %q (%s searched)%s", a.Query, plural(s.corpus.notes, "note"), s.skipped()))
	}
	return succeeded(s.report(t.memory, a.Query))
}

// searchRoots is the mounts under memory, less those inside another, so
// that no file is counted twice; a mount that is one file is a root too.
func searchRoots(memory string, mounts []toolrun.Mount) []string {
	var roots []string
	for _, m := range mounts {
		if within(memory, m.Path) {
			roots = append(roots, filepath.Clean(m.Path))
		}
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	return slices.DeleteFunc(slices.Clone(roots), func(r string) bool {
		return slices.ContainsFunc(roots, func(dir string) bool { return dir != r && within(dir, r) })
	})
}

// within reports whether path is dir or lies below it.
func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// hit is a note that holds at least one query word.
type hit struct {
	path   string
	length int     // words
	tf     []int32 // occurrences of each query word
	score  float64
}

// noteScan is one search's pass over the notes. It holds one file at a
// time, in buf, and for each note that matches its word counts.
type noteScan struct {
	q      *query
	corpus corpus
	hits   []hit
	tf     []int32 // the current file's counts
	buf    []byte
	words  wordScanner
	// Files not searched.
	tooLarge, binary, unreadable int
}

func newNoteScan(q *query) *noteScan {
	return &noteScan{q: q, corpus: corpus{df: make([]int, len(q.words))}, tf: make([]int32, len(q.words))}
}

// visit counts the query words in one file. It never follows a symlink:
// WalkDir does not, only regular files are opened, and with O_NOFOLLOW.
// It never fails the walk: an unreadable directory or file is skipped.
func (s *noteScan) visit(path string, d fs.DirEntry, err error) error {
	if err != nil || !d.Type().IsRegular() {
		if err == nil && d.Type()&fs.ModeSymlink == 0 && !d.IsDir() {
			s.unreadable++ // a FIFO, socket or device: not a note
		}
		return nil
	}
	text, ok := s.read(path)
	if !ok {
		return nil
	}
	clear(s.tf)
	length := s.q.count(&s.words, text, s.tf)
	s.corpus.notes++
	s.corpus.words += int64(length)
	if slices.ContainsFunc(s.tf, func(n int32) bool { return n > 0 }) {
		for i, n := range s.tf {
			if n > 0 {
				s.corpus.df[i]++
			}
		}
		s.hits = append(s.hits, hit{path: path, length: length, tf: slices.Clone(s.tf)})
	}
	return nil
}

// read reads a regular text file at most maxSearchFile bytes long into
// s.buf and returns it; ok is false, and the file counted as skipped,
// when it is larger, binary or cannot be read. It uses the system calls
// directly, since os.File would add a poller registration, an allocation
// and a cleanup to each of ten thousand files.
func (s *noteScan) read(path string) (text []byte, ok bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		s.unreadable++
		return nil, false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	switch err := syscall.Fstat(fd, &st); {
	case err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		s.unreadable++
		return nil, false
	case st.Size > maxSearchFile:
		s.tooLarge++
		return nil, false
	}
	size := int(st.Size)
	if cap(s.buf) < size {
		s.buf = make([]byte, min(max(size, 2*cap(s.buf)), maxSearchFile))
	}
	n := 0
	for n < size { // a file that shrank since Fstat is read as it is now
		k, err := syscall.Read(fd, s.buf[n:size])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			s.unreadable++
			return nil, false
		}
		if k == 0 {
			break
		}
		n += k
	}
	text = s.buf[:n]
	if bytes.IndexByte(text[:min(n, binarySniff)], 0) >= 0 {
		s.binary++
		return nil, false
	}
	return text, true
}

// report ranks the hits (score descending, then path) and writes the best
// with their passages, within maxHits and maxSearchOutput.
func (s *noteScan) report(memory, query string) string {
	idf := s.corpus.idf()
	for i := range s.hits {
		h := &s.hits[i]
		h.score = s.corpus.score(idf, h.tf, h.length)
	}
	slices.SortFunc(s.hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.path, b.path))
	})
	skipped := s.skipped() // before passageOf reads again
	var out strings.Builder
	fmt.Fprintf(&out, "notes matching %q: %d of %d, best first (score path:line: passage)\n",
		query, len(s.hits), s.corpus.notes)
	shown := 0
	for _, h := range s.hits[:min(len(s.hits), maxHits)] {
		rel, _ := filepath.Rel(memory, h.path)
		// Three significant digits, since a word in nearly every note
		// scores near zero.
		score := strconv.FormatFloat(h.score, 'g', 3, 64)
		line := score + " " + displayPath(rel) + ":" + s.passageOf(h.path, idf) + "\n"
		if out.Len()+len(line) > maxSearchOutput {
			break
		}
		out.WriteString(line)
		shown++
	}
	if shown < len(s.hits) {
		fmt.Fprintf(&out, "[the best %d of %d matching notes shown]\n", shown, len(s.hits))
	}
	if skipped != "" {
		out.WriteString(skipped[1:] + "\n")
	}
	return out.String()
}

// passageOf reads a ranked note again for its passage, as "line: text".
func (s *noteScan) passageOf(path string, idf []float64) string {
	text, ok := s.read(path)
	if ok {
		if n, p := passage(s.q, idf, text, &s.words); n > 0 {
			return strconv.Itoa(n) + ": " + p
		}
	}
	return "?: [the note changed or went away during the search]"
}

// skipped says which files were not searched, after a newline, or is "".
func (s *noteScan) skipped() string {
	var parts []string
	if s.tooLarge > 0 {
		parts = append(parts, fmt.Sprintf("%s over %d MiB", plural(s.tooLarge, "file"), maxSearchFile>>20))
	}
	if s.binary > 0 {
		parts = append(parts, plural(s.binary, "binary file"))
	}
	if s.unreadable > 0 {
		parts = append(parts, plural(s.unreadable, "unreadable file"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "\n[not searched: " + strings.Join(parts, ", ") + "]"
}

// displayPath is rel as written, or quoted when it holds a control
// character or invalid UTF-8, so that a note's name cannot start a line
// that looks like another hit.
func displayPath(rel string) string {
	if !utf8.ValidString(rel) || strings.ContainsFunc(rel, unicode.IsControl) {
		return strconv.Quote(rel)
	}
	return rel
}

// plural is "1 note" or "2 notes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

package toolkit

import (
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"
)

// notes_search ranks notes with BM25 (Robertson and Zaragoza, "The
// Probabilistic Relevance Framework: BM25 and Beyond", 2009) over words,
// with the usual parameters and Lucene's IDF, which stays positive for a
// word that most notes contain.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// maxQueryWords bounds the distinct words of a query, so that a word's
// place fits a bit in a uint64 and a long query cannot slow every word of
// every note.
const maxQueryWords = 32

// query is the distinct words of a search, in the order first given.
type query struct {
	words []string
	index map[string]int
	// lengths has bit min(len, 63) set for each word's length in bytes,
	// firsts bit b for each word's first byte b: most words of a note fail
	// these tests and are neither lowercased nor looked up.
	lengths uint64
	firsts  [256 / 64]uint64
}

var errNoWords = errors.New("the query has no words to search for (a word is letters or digits)")

func parseQuery(s string) (query, error) {
	q := query{index: map[string]int{}}
	var sc wordScanner
	sc.reset([]byte(s))
	for sc.next() {
		w := string(sc.word())
		if _, ok := q.index[w]; ok {
			continue
		}
		if len(q.words) == maxQueryWords {
			return query{}, fmt.Errorf("the query has more than %d distinct words", maxQueryWords)
		}
		q.index[w] = len(q.words)
		q.words = append(q.words, w)
		q.lengths |= lengthBit(len(w))
		q.firsts[w[0]/64] |= 1 << (w[0] % 64)
	}
	if len(q.words) == 0 {
		return query{}, errNoWords
	}
	return q, nil
}

func lengthBit(n int) uint64 { return 1 << min(n, 63) }

// lookup returns the place of sc's current word in the query, or -1. An
// ASCII word lowercases to as many bytes, so its length and first byte
// can rule it out before it is lowercased.
func (q *query) lookup(sc *wordScanner) int {
	if sc.ascii && !q.mayHold(sc.text[sc.start], sc.end-sc.start) {
		return -1
	}
	return q.find(sc.word())
}

// find returns the place of the lowercased word in the query, or -1; a
// few words are compared, more hashed.
func (q *query) find(word []byte) int {
	if len(q.words) > 4 {
		if i, ok := q.index[string(word)]; ok {
			return i
		}
		return -1
	}
	for i, w := range q.words {
		if w == string(word) {
			return i
		}
	}
	return -1
}

// mayHold reports whether the query may hold a word of n bytes whose
// first byte, lowercased, is that of ASCII byte c.
func (q *query) mayHold(c byte, n int) bool {
	first := asciiWord[c&0x7f]
	return q.lengths&lengthBit(n) != 0 && q.firsts[first/64]&(1<<(first%64)) != 0
}

// count adds the occurrences of each query word in text to tf (indexed as
// q.words) and returns the number of words in text, its BM25 length.
//
// It is the first pass over every note, so it splits ASCII itself, a
// byte at a time, and hands text to sc only at a non-ASCII byte; it finds
// the same words as sc would alone (FuzzCount checks this).
func (q *query) count(sc *wordScanner, text []byte, tf []int32) int {
	n := 0
	sc.reset(text)
	for i := 0; i < len(text); {
		if byteClass[text[i]] == separator {
			i++
			continue
		}
		start := i
		for i < len(text) && byteClass[text[i]] == inASCIIWord {
			i++
		}
		if i == len(text) || byteClass[text[i]] == separator { // an ASCII word
			n++
			if q.mayHold(text[start], i-start) {
				sc.start, sc.end, sc.ascii = start, i, true
				if k := q.find(sc.word()); k >= 0 {
					tf[k]++
				}
			}
			continue
		}
		sc.pos = start // non-ASCII in or before a word
		if !sc.next() {
			break
		}
		n++
		if k := q.lookup(sc); k >= 0 {
			tf[k]++
		}
		i = sc.end
	}
	return n
}

// corpus is what BM25 needs to know of all the notes searched.
type corpus struct {
	notes int   // notes searched
	words int64 // words in them
	df    []int // notes that contain each query word
}

// idf is each query word's inverse document frequency, Lucene's form:
// log(1 + (N - n + 0.5) / (n + 0.5)).
func (c *corpus) idf() []float64 {
	idf := make([]float64, len(c.df))
	for i, n := range c.df {
		idf[i] = math.Log(1 + (float64(c.notes)-float64(n)+0.5)/(float64(n)+0.5))
	}
	return idf
}

// score is the BM25 score of a note of length words with the query words'
// frequencies tf: the sum over the words of
// IDF * tf*(k1+1) / (tf + k1*(1 - b + b*length/avgdl)).
func (c *corpus) score(idf []float64, tf []int32, length int) float64 {
	avgdl := 1.0
	if c.notes > 0 && c.words > 0 {
		avgdl = float64(c.words) / float64(c.notes)
	}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(length)/avgdl)
	s := 0.0
	for i, f := range tf {
		if f > 0 {
			s += idf[i] * float64(f) * (bm25K1 + 1) / (float64(f) + norm)
		}
	}
	return s
}

// wordScanner splits text into words: runs of letters, marks and decimal
// digits, lowercased rune by rune. A Han, Hiragana or Katakana character is
// a word by itself, since those scripts put no spaces between words.
// Anything else, invalid UTF-8 included, separates words. There is no
// stemming and no Unicode normalisation.
//
// next only finds a word's bytes; word lowercases them when asked, which
// query.lookup does only for a word that could match.
type wordScanner struct {
	text       []byte
	pos        int
	start, end int    // the current word's bytes in text
	ascii      bool   // whether the current word is all ASCII
	lower      []byte // word's result, reused
}

func (s *wordScanner) reset(text []byte) {
	s.text, s.pos, s.start, s.end = text, 0, 0, 0
}

// asciiWord maps an ASCII byte to itself lowercased if it is part of a
// word, and to 0 if it separates words.
var asciiWord = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c] = c
		t[c-'a'+'A'] = c
	}
	return t
}()

// byteClass sorts bytes for count: an ASCII separator, an ASCII byte of a
// word, or a byte of a non-ASCII character.
var byteClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = nonASCII
		case asciiWord[c] != 0:
			t[c] = inASCIIWord
		}
	}
	return t
}()

const (
	separator = iota
	inASCIIWord
	nonASCII
)

// next moves to the next word and reports whether there was one.
func (s *wordScanner) next() bool {
	text, i := s.text, s.pos
	for i < len(text) { // skip what separates words
		if c := text[i]; c < utf8.RuneSelf {
			if asciiWord[c] != 0 {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		if inWord(r) {
			break
		}
		i += n
	}
	s.start, s.ascii = i, true
	for i < len(text) {
		if c := text[i]; c < utf8.RuneSelf {
			if asciiWord[c] == 0 {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		if !inWord(r) {
			break
		}
		if unspaced(r) {
			if i == s.start { // a word of its own; else it ends this one
				i += n
				s.ascii = false
			}
			break
		}
		s.ascii = false
		i += n
	}
	s.pos, s.end = i, i
	return i > s.start
}

// word is the current word, lowercased, valid until the next call.
func (s *wordScanner) word() []byte {
	w, lower := s.text[s.start:s.end], s.lower[:0]
	for i := 0; i < len(w); {
		if c := w[i]; c < utf8.RuneSelf {
			lower = append(lower, asciiWord[c])
			i++
			continue
		}
		r, n := utf8.DecodeRune(w[i:])
		lower = utf8.AppendRune(lower, unicode.ToLower(r))
		i += n
	}
	s.lower = lower
	return lower
}

// inWord reports whether the non-ASCII rune r is part of a word.
func inWord(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
}

// unspaced reports whether r belongs to a script written without spaces
// between words, whose characters are therefore searched one by one.
func unspaced(r rune) bool {
	return r >= firstUnspaced && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// firstUnspaced is where the first of unspaced's scripts starts (CJK
// Radicals Supplement), below which no rune need be looked up.
const firstUnspaced = 0x2E80

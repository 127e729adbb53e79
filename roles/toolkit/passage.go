package toolkit

import (
	"bytes"
	"math/bits"
	"unicode"
	"unicode/utf8"
)

// maxPassage bounds the passage shown for a hit, in bytes, marks of a cut
// included.
const maxPassage = 200

// cutMark stands for text left out at either end of a passage.
const cutMark = "…"

// maxWordCut is how far, at most, either end of a passage moves in so as
// to cut at a space rather than inside a word.
const maxWordCut = 16

// passage chooses what to show of a matching note: the line whose query
// words weigh most (each distinct word by its IDF; then more matches;
// then the earlier line), cut to maxPassage bytes around its densest
// matches. It returns the line's number, from 1, or 0 when no line holds
// a query word (the note changed since it was ranked).
func passage(q *query, idf []float64, text []byte, sc *wordScanner) (int, string) {
	bestLine, bestStart, bestEnd := 0, 0, 0
	bestWeight, bestCount := 0.0, 0
	for n, start := 1, 0; start < len(text); n++ {
		end := bytes.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		var seen uint64
		count := 0
		sc.reset(text[start:end])
		for sc.next() {
			if i := q.lookup(sc); i >= 0 {
				seen |= 1 << i
				count++
			}
		}
		if w := weigh(seen, idf); count > 0 && (w > bestWeight || w == bestWeight && count > bestCount) {
			bestLine, bestStart, bestEnd, bestWeight, bestCount = n, start, end, w, count
		}
		start = end + 1
	}
	if bestLine == 0 {
		return 0, ""
	}
	return bestLine, window(q, idf, oneLine(bytes.TrimSpace(text[bestStart:bestEnd])), sc)
}

// weigh sums the IDF of the query words whose bits are set in seen.
func weigh(seen uint64, idf []float64) float64 {
	w := 0.0
	for ; seen != 0; seen &= seen - 1 {
		w += idf[bits.TrailingZeros64(seen)]
	}
	return w
}

// match is one occurrence of query word word at line[start:end].
type match struct{ start, end, word int }

// window cuts line, valid UTF-8, to maxPassage bytes: the span of
// matches that fits and whose distinct words weigh most (the most matches
// on a tie, then the earliest), centred, widened to whole words where a
// space is near, cut on a character boundary, with cutMark where text was
// left out.
func window(q *query, idf []float64, line []byte, sc *wordScanner) string {
	if len(line) <= maxPassage {
		return string(line)
	}
	budget := maxPassage - 2*len(cutMark)
	// Slide over the matches, holding only those that fit in budget
	// bytes, since a line may hold millions.
	var in []match
	counts := make([]int, len(q.words))
	var seen uint64
	spanStart, spanEnd, bestWeight, bestCount := 0, 0, -1.0, 0
	sc.reset(line)
	for sc.next() {
		k := q.lookup(sc)
		if k < 0 {
			continue
		}
		m := match{sc.start, sc.end, k}
		in = append(in, m)
		if counts[k]++; counts[k] == 1 {
			seen |= 1 << k
		}
		for len(in) > 1 && m.end-in[0].start > budget {
			if counts[in[0].word]--; counts[in[0].word] == 0 {
				seen &^= 1 << in[0].word
			}
			in = in[1:]
		}
		if w := weigh(seen, idf); w > bestWeight || w == bestWeight && len(in) > bestCount {
			spanStart, spanEnd = in[0].start, min(m.end, in[0].start+budget)
			bestWeight, bestCount = w, len(in)
		}
	}
	// Centre the span in the budget, then shift it back inside the line.
	start := max(0, spanStart-(budget-(spanEnd-spanStart))/2)
	end := min(len(line), start+budget)
	start = max(0, end-budget)
	// Cut at a space instead if one is near, outside the span.
	if start > 0 {
		if k := bytes.IndexByte(line[start:min(start+maxWordCut, spanStart)], ' '); k >= 0 {
			start += k + 1
		}
	}
	if end < len(line) {
		from := max(spanEnd, end-maxWordCut)
		if k := bytes.LastIndexByte(line[from:end], ' '); k >= 0 {
			end = from + k
		}
	}
	for start < len(line) && !utf8.RuneStart(line[start]) {
		start++
	}
	for end < len(line) && end > start && !utf8.RuneStart(line[end]) {
		end--
	}
	out := string(bytes.TrimSpace(line[start:end]))
	if start > 0 {
		out = cutMark + out
	}
	if end < len(line) {
		out += cutMark
	}
	return out
}

// oneLine is text with each control character and line or paragraph
// separator made a space, so that a passage stays on its hit's line (a
// note may end its lines with a lone CR), and each byte of invalid UTF-8
// made U+FFFD, so that window measures what will be shown.
func oneLine(text []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, text)
}

package bxctl

import "strings"

// wordWrap breaks streamed text at spaces so that no word is cut at the
// terminal's edge, as the terminal itself would cut it. It holds back the
// word being written, and the spaces before it, until the word ends: a
// reply streams in pieces that may end inside a word, and the spaces at a
// break are dropped. A word longer than a line is let through whole, for
// the terminal to cut.
type wordWrap struct {
	col    int             // the column the next character lands in
	spaces strings.Builder // the spaces before the held word
	word   strings.Builder // the word held back
	n, sp  int             // their lengths in characters
}

// add takes sanitized text and returns what to write now.
func (w *wordWrap) add(text string, width int) string {
	var out strings.Builder
	for _, r := range text {
		switch r {
		case '\n':
			out.WriteString(w.flush(width))
			w.spaces.Reset()
			w.sp = 0
			out.WriteByte('\n')
			w.col = 0
		case ' ', '\t':
			if w.n > 0 {
				out.WriteString(w.flush(width))
			}
			w.spaces.WriteRune(r)
			w.sp++
		default:
			w.word.WriteRune(r)
			w.n++
			if w.n >= width {
				out.WriteString(w.flush(width))
			}
		}
	}
	return out.String()
}

// flush returns the held word after its spaces, or after a line break
// instead when it would not fit.
func (w *wordWrap) flush(width int) string {
	if w.n == 0 {
		return ""
	}
	spaces, word, n := w.spaces.String(), w.word.String(), w.n
	w.spaces.Reset()
	w.word.Reset()
	sp := w.sp
	w.n, w.sp = 0, 0
	if w.col > 0 && w.col+sp+n > width {
		w.col = n
		if w.col > width { // a word longer than a line wrapped by itself
			w.col %= width
		}
		return "\n" + word
	}
	w.col += sp + n
	if w.col > width {
		w.col %= width
	}
	return spaces + word
}

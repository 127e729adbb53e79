package bxctl

import (
	"strings"
	"testing"
)

// TestRepliesWrapAtWords: streamed text in pieces that end inside words
// breaks only at spaces, never inside a word; lines never pass the width.
func TestRepliesWrapAtWords(t *testing.T) {
	const width = 20
	text := "the quick brown fox jumps over the lazy dog and keeps running far away\nnew paragraph here"
	var w wordWrap
	var out strings.Builder
	for i := 0; i < len(text); i += 7 { // pieces that cut words
		out.WriteString(w.add(text[i:min(i+7, len(text))], width))
	}
	out.WriteString(w.flush(width))
	got := out.String()
	want := "the quick brown fox\njumps over the lazy\ndog and keeps\nrunning far away\nnew paragraph here"
	if got != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range strings.Split(got, "\n") {
		if len(line) > width {
			t.Errorf("line %q is over %d columns", line, width)
		}
	}
	if strings.ReplaceAll(strings.ReplaceAll(got, "\n", " "), "  ", " ") != strings.ReplaceAll(text, "\n", " ") {
		t.Errorf("wrapping changed the words:\n%s", got)
	}
}

// TestLongWordPassesWhole: a word longer than a line is written as it
// comes, for the terminal to cut; nothing is lost.
func TestLongWordPassesWhole(t *testing.T) {
	var w wordWrap
	word := strings.Repeat("x", 25)
	got := w.add("ab "+word+" cd", 10) + w.flush(10)
	if strings.Join(strings.Fields(got), " ") != "ab "+strings.Repeat("xxxxxxxxxx ", 2)+"xxxxx cd" {
		t.Errorf("got %q", got)
	}
}

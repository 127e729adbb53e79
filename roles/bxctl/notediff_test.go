package bxctl

import "testing"

// TestLineDiff: a replaced note shows its removed and added lines with
// context, and a model's escape sequences in either stay visible text.
func TestLineDiff(t *testing.T) {
	old := "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	new := "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n\x1b[2Jeight\n"
	want := "      two\n      three\n    - four\n    + FOUR\n      five\n      six\n      seven\n    + \\x1b[2Jeight\n"
	if got := lineDiff(old, new); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := lineDiff("a\n", "a\n"); got != "    (no change)\n" {
		t.Errorf("no change: %q", got)
	}
}

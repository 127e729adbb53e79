package termtext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"boxmaker/fixtures/require"
)

// ucd15 is Default_Ignorable_Code_Point as DerivedCoreProperties.txt of
// Unicode 15.0.0 lists it (4,174 code points), to hold the derivation in
// ignorable.go to the published property.
var ucd15 = [][2]rune{
	{0x00ad, 0x00ad}, {0x034f, 0x034f}, {0x061c, 0x061c}, {0x115f, 0x1160}, {0x17b4, 0x17b5},
	{0x180b, 0x180d}, {0x180e, 0x180e}, {0x180f, 0x180f}, {0x200b, 0x200f}, {0x202a, 0x202e},
	{0x2060, 0x2064}, {0x2065, 0x2065}, {0x2066, 0x206f}, {0x3164, 0x3164}, {0xfe00, 0xfe0f},
	{0xfeff, 0xfeff}, {0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a},
	{0xe0000, 0xe0000}, {0xe0001, 0xe0001}, {0xe0002, 0xe001f}, {0xe0020, 0xe007f},
	{0xe0080, 0xe00ff}, {0xe0100, 0xe01ef}, {0xe01f0, 0xe0fff},
}

func inUCD15(r rune) bool {
	for _, span := range ucd15 {
		if r >= span[0] && r <= span[1] {
			return true
		}
	}
	return false
}

// TestDefaultIgnorableIsTheProperty: the derivation gives exactly the
// published property, for the Unicode version whose file is above (a Go
// built with other tables checks the escaping below only).
func TestDefaultIgnorableIsTheProperty(t *testing.T) {
	if unicode.Version != "15.0.0" {
		require.Elsewhere(t, "the listing above is Unicode 15.0.0's; Go has "+unicode.Version)
	}
	n := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if DefaultIgnorable(r) != inUCD15(r) {
			t.Errorf("DefaultIgnorable(%U) = %v, DerivedCoreProperties says %v", r, DefaultIgnorable(r), inUCD15(r))
		}
		if DefaultIgnorable(r) {
			n++
		}
	}
	if n != 4174 {
		t.Errorf("%d default ignorable code points, want 4174", n)
	}
}

// TestEveryDefaultIgnorableIsEscaped: every code point of the property, and
// every variation selector, is shown as an escape by Clean and Line, alone
// and between letters.
func TestEveryDefaultIgnorableIsEscaped(t *testing.T) {
	checked := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !DefaultIgnorable(r) && !unicode.Is(unicode.Variation_Selector, r) {
			continue
		}
		checked++
		if Safe(r) {
			t.Errorf("Safe(%U) = true for a default ignorable code point", r)
			continue
		}
		in := "a" + string(r) + "b"
		for _, out := range []string{Clean(in), Line(in)} {
			if strings.ContainsRune(out, r) || !strings.HasPrefix(out, `a\u`) && !strings.HasPrefix(out, `a\U`) {
				t.Errorf("%U comes out as %q", r, out)
			}
		}
	}
	if checked < 4174 {
		t.Errorf("checked %d code points: the property has at least 4174", checked)
	}
}

// TestLookalikeNoteIsVisible: an approval for notes/to<U+034F>do.md, shown
// the way an approval line shows its subject, cannot be read as todo.md.
func TestLookalikeNoteIsVisible(t *testing.T) {
	for _, hidden := range []rune{0x034f, 0xfe0f, 0x17b4, 0x17b5, 0x180b, 0x180f, 0xe0100} {
		subject := "notes/to" + string(hidden) + "do.md"
		got := "approval a1: notes_write " + Line(subject)
		if strings.Contains(got, "notes/todo.md") || strings.ContainsRune(got, hidden) {
			t.Errorf("%U: the approval reads %q, like notes/todo.md", hidden, got)
		}
	}
}

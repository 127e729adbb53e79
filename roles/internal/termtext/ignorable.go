package termtext

import "unicode"

// The derived property Default_Ignorable_Code_Point, built from the tables
// Go was compiled with. Go ships only its contributory part,
// unicode.Other_Default_Ignorable_Code_Point; the whole property is derived
// as DerivedCoreProperties.txt says (UAX #44, section 5.3):
//
//	  Other_Default_Ignorable_Code_Point
//	+ Cf (format characters)
//	+ Variation_Selector
//	- White_Space
//	- U+FFF9..U+FFFB (interlinear annotation format characters)
//	- U+13430..U+1343F (Egyptian hieroglyph format characters)
//	- Prepended_Concatenation_Mark (format characters that must be visible)
//
// Every table named there is one of Go's (unicode.Cf, unicode.White_Space,
// unicode.Variation_Selector, unicode.Prepended_Concatenation_Mark); the two
// ranges are the file's own literals. Safe escapes the property and more
// (every Cf, every variation selector), since what it subtracts is visible
// only to a renderer that knows it, never to a terminal.

// DefaultIgnorable reports whether r has Unicode's Default_Ignorable_Code_Point
// property: a character a renderer shows as nothing when it does not
// support it (U+034F COMBINING GRAPHEME JOINER, U+17B4, the variation
// selectors, the tag characters, ...).
func DefaultIgnorable(r rune) bool {
	switch {
	case r >= 0xfff9 && r <= 0xfffb, r >= 0x13430 && r <= 0x1343f:
		return false
	case unicode.Is(unicode.White_Space, r), unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector)
}

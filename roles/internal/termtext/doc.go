// Package termtext is the one sanitizer for text boxmaker prints to a
// terminal that did not come from boxmaker itself: model replies, tool
// output, notes, approval subjects and arguments, peer names, log lines
// (DESIGN.md section 11, terminal hygiene). Clean keeps newlines and tabs
// for multi-line text; Line escapes them too, for one-line fields.
//
// Whatever a terminal would act on, or a reader could not see, is shown as
// a visible escape instead: C0 controls and DEL as \x1b, C1 controls,
// format characters (bidi overrides and isolates, zero-width characters,
// the soft hyphen, tag characters), line and paragraph separators, every
// variation selector and every other Default_Ignorable_Code_Point (derived
// from Go's Unicode tables as UAX #44 says: ignorable.go) as \u202e or
// \U000e0001, and bytes that are not UTF-8 as \xff. Everything else passes
// as it is, backslashes included, so the escapes are for a reader, not a
// parser: the output cannot be decoded back.
//
// termtext must never interpret, drop or reorder anything (no stripping:
// what was hidden must become visible), never let through a byte that
// starts a terminal control sequence (ESC, CSI U+009B, OSC, DCS or APC),
// never do I/O, and never import another boxmaker package. It makes text
// safe for a terminal only, not for HTML, Markdown or a shell.
package termtext

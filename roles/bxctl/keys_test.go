package bxctl

import (
	"io"
	"strings"
	"testing"

	"golang.org/x/term"
)

// lineEditor reads input through a keyReader as the chat does.
func lineEditor(input string) (*term.Terminal, *keyReader) {
	keys := newKeyReader(strings.NewReader(input))
	return term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, io.Discard}, chatPrompt), keys
}

// TestPasteIsOneMessage: a bracketed paste of several lines ends the line
// being typed with the whole paste, not one line per pasted line; a paste
// of one line is typed text, its control bytes dropped.
func TestPasteIsOneMessage(t *testing.T) {
	ed, keys := lineEditor("see: \x1b[200~first line\r\nsecond line\rthird line\x1b[201~" +
		"x\x1b[200~one \x03line\x1b[201~\r")
	line, err := ed.ReadLine()
	if err != nil || line != "see: " || keys.interrupted() != pasteKey {
		t.Fatalf("first ReadLine: %q %v, key %d", line, err, keys.interrupted())
	}
	if got := keys.pasted(); got != "first line\nsecond line\nthird line" {
		t.Errorf("the paste is %q", got)
	}
	line, err = ed.ReadLine()
	if err != nil || line != "xone line" || keys.interrupted() != 0 {
		t.Errorf("second ReadLine: %q %v, key %d", line, err, keys.interrupted())
	}
}

// TestCtrlCAndCtrlDEndTheLine: each key ends the line it was pressed on,
// and is told apart from Enter.
func TestCtrlCAndCtrlDEndTheLine(t *testing.T) {
	ed, keys := lineEditor("abc\x03\x03hello\r\x04")
	for _, want := range []struct {
		line string
		key  byte
	}{{"abc", ctrlC}, {"", ctrlC}, {"hello", 0}, {"", ctrlD}} {
		line, err := ed.ReadLine()
		if err != nil || line != want.line || keys.interrupted() != want.key {
			t.Errorf("ReadLine: %q %v key %d, want %q key %d", line, err, keys.interrupted(), want.line, want.key)
		}
	}
}

package bxctl

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"boxmaker/wire"

	"golang.org/x/term"
)

// maxMessage is the most one message may hold: half a frame, so that the
// chat_send around it, with JSON's escapes, still fits in one.
const maxMessage = wire.MaxFrame / 2

// readMessage reads the one message of a chat without a terminal. Past
// maxMessage it refuses rather than cut the text (perhaps inside a
// character) and send what the owner did not write.
func readMessage(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxMessage+1))
	if err != nil {
		return "", fmt.Errorf("chat: reading the message from standard input: %w", err)
	}
	if len(data) > maxMessage {
		return "", usagef("chat: the message on standard input is over %d KiB, the most one message may hold; send less", maxMessage>>10)
	}
	return strings.TrimSpace(string(data)), nil
}

// checkMessage refuses a message loopd could not take: empty, too long, or
// not UTF-8 (which the wire cannot carry).
func checkMessage(msg string) error {
	switch {
	case strings.TrimSpace(msg) == "":
		return usagef("chat: the message is empty")
	case len(msg) > maxMessage:
		return usagef("chat: the message is %d KiB, over %d KiB, the most one message may hold; send less", len(msg)>>10, maxMessage>>10)
	case !utf8.ValidString(msg):
		return usagef("chat: the message is not valid UTF-8 (at byte %d)", invalidAt(msg))
	}
	return nil
}

// invalidAt is the offset of the first byte that is not valid UTF-8.
func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return len(s)
}

// terminalOf is r as a terminal, when it is one.
func terminalOf(r io.Reader) (*os.File, bool) {
	f, ok := r.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

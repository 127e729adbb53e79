package bxctl

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"boxmaker/roles"
)

// runWith is run with stdin as the command's standard input.
func runWith(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	p := roles.Program{Version: "test", Roles: []roles.Role{{Name: "bxctl", Command: Command}}, Commands: Commands, Stdin: stdin}
	var out, errOut bytes.Buffer
	code := p.Run(context.Background(), append([]string{"boxmaker"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestChatRefusesWhatItCannotSend: a message past the limit is refused
// whole, saying the limit, never cut and sent in part; so is one that is
// not UTF-8. Neither needs loopd to be told.
func TestChatRefusesWhatItCannotSend(t *testing.T) {
	home := t.TempDir()
	big := strings.Repeat("é", maxMessage/2) + "x" // one byte over, the cut would fall inside a character
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"stdin over the limit", big, nil, "the message on standard input is over 512 KiB, the most one message may hold"},
		{"--message over the limit", "", []string{"--message", big}, "over 512 KiB, the most one message may hold"},
		{"stdin not UTF-8", "caf\xe9 au lait", nil, "not valid UTF-8 (at byte 3)"},
		{"an empty message", " \n", nil, "the message is empty"},
	} {
		code, out, errOut := runWith(t, strings.NewReader(c.stdin), append([]string{"chat", "--home", home}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want status 2 saying %q", c.name, code, out, errOut, c.want)
		}
	}
	code, _, errOut := runWith(t, strings.NewReader(strings.Repeat("a", maxMessage)), "chat", "--home", home)
	if code != 1 || !strings.Contains(errOut, "loopd is not answering") {
		t.Errorf("a message of exactly the limit: status %d %q; want it sent (and loopd not found)", code, errOut)
	}
}

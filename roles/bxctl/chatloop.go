package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"golang.org/x/term"
)

const (
	bracketedPasteOn  = "\x1b[?2004h"
	bracketedPasteOff = "\x1b[?2004l"
)

// interactive reads lines with editing and history until Ctrl-D, /exit,
// or Ctrl-C twice at an empty prompt. Ctrl-C on a line drops it; during a
// turn it cancels the turn. A paste of several lines is one message.
func (c *chatter) interactive(ctx context.Context, tty *os.File) error {
	fd := int(tty.Fd())
	state, err := term.MakeRaw(fd)
	if err != nil {
		return err
	}
	defer term.Restore(fd, state)
	keys := newKeyReader(tty)
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, os.Stdout}, chatPrompt)
	v := &termView{t: t, keys: keys, fd: fd}
	c.view = v
	v.write(bracketedPasteOn)
	defer v.write(bracketedPasteOff)
	v.write(banner(scriptedModel(c.paths)))
	armed := false // a Ctrl-C at an empty prompt asked to press it again to leave
	for {
		line, err := v.readLine()
		if errors.Is(err, io.EOF) {
			v.write("\n") // the terminal went away mid-line; leave the shell a fresh one
			return nil
		}
		if err != nil {
			return err
		}
		key := keys.interrupted()
		switch {
		case key == ctrlD:
			return nil
		case key == ctrlC && line == "" && armed:
			return nil
		case key == ctrlC:
			armed = line == ""
			if armed {
				v.activity("press Ctrl-C again (or Ctrl-D) to leave")
			}
			continue
		case key == pasteKey:
			line += keys.pasted()
			v.write(termtext.Clean(keys.pasted()) + "\n")
		}
		armed = false
		leave, err := c.command(ctx, v, line)
		if leave {
			return err
		}
		if err != nil {
			v.activity(err.Error())
		}
	}
}

// command acts on one line: a slash command, or a message for the model.
// "//" at the start sends the rest, slash and all, as a message.
func (c *chatter) command(ctx context.Context, v *termView, line string) (leave bool, err error) {
	trimmed := strings.TrimSpace(line)
	switch {
	case trimmed == "":
		return false, nil
	case strings.HasPrefix(trimmed, "//"):
		line = line[strings.Index(line, "/")+1:]
	case strings.HasPrefix(trimmed, "/"):
		return c.slash(ctx, v, trimmed)
	}
	err = c.interactiveTurn(ctx, v, line)
	if errors.Is(err, errTerminalGone) {
		return true, nil
	}
	return false, err
}

// slashHelp lists the chat's own commands.
const slashHelp = `/help             this list
/exit, /quit      leave (or Ctrl-D; or Ctrl-C twice at an empty prompt)
/new              start a new session with the next message
/sessions         list the sessions loopd keeps
/resume NAME      go on in session NAME
/status           this session, its taint, and what waits for you
/approvals        the tool calls waiting for your approval
//text            send "/text" to the model
Ctrl-C during a turn cancels it; a paste of several lines is one message.`

func (c *chatter) slash(ctx context.Context, v *termView, line string) (bool, error) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/exit", "/quit":
		return true, nil
	case "/help":
		v.write(slashHelp + "\n")
	case "/new":
		c.session, c.shown = nil, wire.SessionID{}
		v.activity("the next message starts a new session")
	case "/sessions":
		return false, c.showSessions(ctx, v)
	case "/resume":
		return false, c.resume(ctx, v, arg)
	case "/status":
		return false, c.showStatus(ctx, v)
	case "/approvals":
		return false, c.showApprovals(ctx, v)
	default:
		return false, fmt.Errorf("no chat command %s; /help lists them (//text sends /text to the model)", termtext.Line(name))
	}
	return false, nil
}

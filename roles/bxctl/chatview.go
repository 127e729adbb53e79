package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"boxmaker/wire"

	"golang.org/x/term"
)

// plainView is for one message without a terminal: the reply on stdout,
// everything else on stderr, and approvals answered elsewhere.
type plainView struct {
	out, err io.Writer
}

func (v plainView) delta(string)         {}
func (v plainView) reasoning(string)     {}
func (v plainView) activity(line string) { fmt.Fprintln(v.err, "boxmaker: "+line) }
func (v plainView) done(content string)  { fmt.Fprintln(v.out, content) }

func (v plainView) askApproval(a wire.Approval) *bool {
	describeApproval(v.err, a)
	return nil
}

func describeApproval(w io.Writer, a wire.Approval) {
	fmt.Fprintf(w, "approval %s: %s (session %s, call %d)\n  arguments: %q\n  grant %s, session taint %s, expires %s\n",
		a.Approval, a.Tool, a.Session, a.Call, a.Arguments, a.Grant, a.SessionTaint, a.Expires)
}

// termView streams a turn into an interactive terminal.
type termView struct {
	t        *term.Terminal
	midLine  bool // the reply has text on the current line
	thinking bool // the last text written was reasoning
}

const (
	dim        = "\x1b[2m"
	reset      = "\x1b[0m"
	chatPrompt = "you> "
)

func (v *termView) write(s string) { v.t.Write([]byte(s)) }

func (v *termView) delta(text string) {
	if v.thinking {
		v.write(reset + "\n")
		v.thinking = false
	}
	v.write(text)
	v.midLine = !strings.HasSuffix(text, "\n")
}

func (v *termView) reasoning(text string) {
	if !v.thinking {
		v.write(dim)
		v.thinking = true
	}
	v.write(text)
}

func (v *termView) activity(line string) {
	v.endLine()
	v.write(dim + "· " + line + reset + "\n")
}

func (v *termView) endLine() {
	if v.thinking {
		v.write(reset)
		v.thinking = false
	}
	if v.midLine {
		v.write("\n")
		v.midLine = false
	}
}

func (v *termView) done(string) { v.endLine() }

func (v *termView) askApproval(a wire.Approval) *bool {
	v.endLine()
	var b strings.Builder
	describeApproval(&b, a)
	v.write(b.String())
	v.t.SetPrompt("approve? [y/N] ")
	defer v.t.SetPrompt(chatPrompt)
	line, err := v.t.ReadLine()
	if err != nil {
		return nil
	}
	yes := strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
	return &yes
}

// interactive reads lines with editing and history until EOF or /quit.
func (c *chatter) interactive(ctx context.Context) error {
	fd := int(os.Stdin.Fd())
	state, err := term.MakeRaw(fd)
	if err != nil {
		return err
	}
	defer term.Restore(fd, state)
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{os.Stdin, os.Stdout}, chatPrompt)
	v := &termView{t: t}
	c.view = v
	v.write("boxmaker chat: type a message; /quit or Ctrl-D to leave\n")
	for {
		line, err := t.ReadLine()
		if errors.Is(err, io.EOF) || strings.TrimSpace(line) == "/quit" {
			return nil
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := c.turn(ctx, line); err != nil {
			v.activity(err.Error())
		}
	}
}

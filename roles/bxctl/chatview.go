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

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// plainView is for one message without a terminal: the reply on stdout,
// everything else on stderr, and approvals answered elsewhere. What the
// model wrote goes through the sanitizer here too: stdout may well be a
// terminal that is not stdin's.
type plainView struct {
	out, err io.Writer
}

func (v plainView) delta(string)         {}
func (v plainView) reasoning(string)     {}
func (v plainView) activity(line string) { fmt.Fprintln(v.err, "boxmaker: "+termtext.Line(line)) }
func (v plainView) done(content string)  { fmt.Fprintln(v.out, termtext.Clean(content)) }
func (v plainView) handle(ref wire.HandleRef, content string) {
	writeHandle(v.out, ref, content)
}

func (v plainView) askApproval(a wire.Approval) *bool {
	describeApproval(v.err, a)
	return nil
}

// describeApproval shows an approval as brokerd describes it: the subject
// first and whole, then the canonical arguments, all of it through the
// sanitizer (brokerd's text is a peer's text too).
func describeApproval(w io.Writer, a wire.Approval) {
	fmt.Fprintf(w, "approval %s: %s %s\n", termtext.Line(a.Approval), termtext.Line(a.Tool), termtext.Line(a.Subject))
	fmt.Fprintf(w, "  arguments: %s\n", termtext.Line(a.Arguments))
	trust := ""
	if a.SessionUntrusted {
		trust = " (the session has read untrusted data)"
	}
	fmt.Fprintf(w, "  session %s, call %d, grant %s, session taint %s%s, expires %s\n",
		a.Session, a.Call, termtext.Line(a.Grant), a.SessionTaint, trust, a.Expires)
}

// termView streams a turn into an interactive terminal.
type termView struct {
	t        *term.Terminal
	keys     *keyReader
	fd       int
	midLine  bool // the reply has text on the current line
	thinking bool // the last text written was reasoning
}

const (
	dim        = "\x1b[2m"
	reset      = "\x1b[0m"
	chatPrompt = "you> "
	// resetTerminal undoes whatever state our own output could have left:
	// the scroll region (resetting it homes the cursor, so the cursor is
	// saved around it), attributes and a hidden cursor.
	resetTerminal = "\x1b7\x1b[r\x1b8\x1b[0m\x1b[?25h"
	// promptSubjectRunes is how much of the subject the prompt line
	// repeats; the block above it shows the subject whole.
	promptSubjectRunes = 160
)

func (v *termView) write(s string) { v.t.Write([]byte(s)) }

func (v *termView) delta(text string) {
	if v.thinking {
		v.endLine() // the reply starts on a line of its own, undimmed
	}
	v.write(termtext.Clean(text))
	v.midLine = !strings.HasSuffix(text, "\n")
}

func (v *termView) reasoning(text string) {
	if !v.thinking {
		v.endLine()
		v.write(dim)
		v.thinking = true
	}
	v.write(termtext.Clean(text))
	v.midLine = !strings.HasSuffix(text, "\n")
}

func (v *termView) activity(line string) {
	v.endLine()
	v.write(dim + "· " + termtext.Line(line) + reset + "\n")
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

// handle shows a handle the reply mentions. The label line is dim, as the
// activity lines are: a reply's own text,
// sanitized, cannot set an attribute, so a "[handle …]" line the model
// wrote into its reply shows plain and cannot pass for brokerd's label.
func (v *termView) handle(ref wire.HandleRef, content string) {
	v.endLine()
	var b strings.Builder
	b.WriteString(dim + "[handle " + handleLabel(ref) + "]" + reset + "\n")
	writeContent(&b, content)
	v.write(b.String()) // handleLabel and writeContent sanitized it
}

// askApproval asks on a clean terminal: state reset, keys typed before the
// question dropped, the prompt naming the approval and its subject. Only y
// or yes approves; Ctrl-C or Ctrl-D denies and the chat goes on.
func (v *termView) askApproval(a wire.Approval) *bool {
	v.endLine()
	v.write(resetTerminal)
	var b strings.Builder
	describeApproval(&b, a)
	v.write(b.String())
	flushInput(v.fd)
	v.keys.discard()
	v.t.SetPrompt(fmt.Sprintf("approve %s (%s %s)? [y/N] ", termtext.Line(a.Approval), termtext.Line(a.Tool), promptSubject(a.Subject)))
	defer v.t.SetPrompt(chatPrompt)
	line, err := v.readLine()
	no := false
	if err != nil || v.keys.interrupted() != 0 {
		v.write("not approved\n")
		return &no
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	yes := answer == "y" || answer == "yes"
	return &yes
}

// readLine reads a line after telling the line editor the terminal's size:
// it redraws a prompt longer than the width it believes in (80 columns
// unless told) by moving up and clearing lines that hold other text.
func (v *termView) readLine() (string, error) {
	// A pseudo-terminal nobody sized reports 0x0; the editor's default
	// then beats a width of zero, which would wrap after every character.
	if w, h, err := term.GetSize(v.fd); err == nil && w > 0 && h > 0 {
		_ = v.t.SetSize(w, h)
	}
	return v.t.ReadLine()
}

func promptSubject(subject string) string {
	s := termtext.Line(subject)
	if r := []rune(s); len(r) > promptSubjectRunes {
		return string(r[:promptSubjectRunes]) + "… (whole above)"
	}
	return s
}

// flushInput drops what the owner typed before the question was on the
// screen, so that a "y" typed ahead (perhaps at the model's urging) does not
// answer it.
func flushInput(fd int) {
	_ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH)
}

// interactive reads lines with editing and history until Ctrl-D or /quit.
// Ctrl-C drops the line being typed; the chat goes on.
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
	v.write(banner(scriptedModel(c.paths)))
	for {
		line, err := v.readLine()
		if errors.Is(err, io.EOF) {
			v.write("\n") // the terminal went away mid-line; leave the shell a fresh one
			return nil
		}
		if err != nil {
			return err
		}
		switch keys.interrupted() {
		case ctrlD:
			return nil
		case ctrlC:
			continue
		}
		if strings.TrimSpace(line) == "/quit" {
			return nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := c.turn(ctx, line); err != nil {
			v.activity(err.Error())
		}
	}
}

// banner is the chat's first line. The scripted model is named there, as on
// every screen it answers on, so that nobody takes it for a language model.
func banner(scripted bool) string {
	if scripted {
		return "boxmaker chat with the SCRIPTED MODEL (fixed replies, not a language model): type a message; /quit or Ctrl-D to leave\n"
	}
	return "boxmaker chat: type a message; /quit or Ctrl-D to leave\n"
}

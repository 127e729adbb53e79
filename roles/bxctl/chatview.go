package bxctl

import (
	"fmt"
	"io"
	"strings"
	"sync"

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
	mu       *sync.Mutex // --approval-wait's bound writes from its own goroutine
}

func (v plainView) delta(string)     {}
func (v plainView) reasoning(string) {}
func (v plainView) activity(line string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintln(v.err, "boxmaker: "+termtext.Line(line))
}
func (v plainView) done(content string) { fmt.Fprintln(v.out, termtext.Clean(content)) }
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
	statusUp bool // the status line is on the screen
	width    int  // the terminal's columns, 0 when unknown (no wrapping)
	wrap     wordWrap
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
	v.put(text)
}

// put writes streamed text, sanitized, broken at words when the width is known.
func (v *termView) put(text string) {
	s := termtext.Clean(text)
	if v.width > 0 {
		s = v.wrap.add(s, v.width)
	}
	v.write(s)
	v.midLine = !strings.HasSuffix(text, "\n")
}

func (v *termView) reasoning(text string) {
	if !v.thinking {
		v.endLine()
		v.write(dim)
		v.thinking = true
	}
	v.put(text)
}

func (v *termView) activity(line string) {
	v.endLine()
	v.write(dim + "· " + termtext.Line(line) + reset + "\n")
}

func (v *termView) endLine() {
	if held := v.wrap.flush(v.width); held != "" {
		v.write(held)
	}
	v.wrap.col = 0
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

// askApproval is not how a terminal asks: the chat's own loop asks
// (promptApproval), where it can watch brokerd and the keys at once.
func (v *termView) askApproval(wire.Approval) *bool { return nil }

// status shows what the turn waits for on a line of its own, redrawn in
// place until clearStatus takes it away.
func (v *termView) status(line string) {
	if v.midLine && !v.statusUp {
		v.endLine()
	}
	v.write("\r\x1b[K" + dim + "… " + termtext.Line(line) + reset)
	v.statusUp = true
}

func (v *termView) clearStatus() {
	if v.statusUp {
		v.write("\r\x1b[K")
		v.statusUp = false
	}
}

// readLine reads a line after telling the line editor the terminal's size:
// it redraws a prompt longer than the width it believes in (80 columns
// unless told) by moving up and clearing lines that hold other text.
func (v *termView) readLine() (string, error) {
	// A pseudo-terminal nobody sized reports 0x0; the editor's default
	// then beats a width of zero, which would wrap after every character.
	if w, h, err := term.GetSize(v.fd); err == nil && w > 0 && h > 0 {
		_ = v.t.SetSize(w, h)
		v.width = w
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

// banner is the chat's first line. The scripted model is named there, as on
// every screen it answers on, so that nobody takes it for a language model.
func banner(scripted bool) string {
	if scripted {
		return "boxmaker chat with the SCRIPTED MODEL (fixed replies, not a language model): type a message; /help for commands; /exit or Ctrl-D to leave\n"
	}
	return "boxmaker chat: type a message; /help for commands; /exit or Ctrl-D to leave\n"
}

package bxctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"boxmaker/audit"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"
)

// promptAnswer is how an approval prompt ended.
type promptAnswer int

const (
	answerRefuse    promptAnswer = iota // n, Enter, Ctrl-C, Ctrl-D: not approved
	answerApprove                       // y
	answerElsewhere                     // answered elsewhere, or expired: nothing to send
)

// pollApprovals is how often the prompt asks brokerd whether the approval
// is still pending: an answer from another terminal or Mattermost ends the
// prompt within this.
const pollApprovals = 300 * time.Millisecond

// promptApproval asks the owner about a on a clean terminal, one key: y
// approves, a shows the grant that would allow this call from now on and
// writes it on a second y, anything that refuses (n, Enter, Ctrl-C,
// Ctrl-D) refuses; other keys are ignored. Keys typed before the question
// was on the screen are dropped. An answer given elsewhere ends it at once.
func (c *chatter) promptApproval(ctx context.Context, v *termView, a wire.Approval) promptAnswer {
	v.endLine()
	v.write(resetTerminal)
	var b strings.Builder
	describeApproval(&b, a)
	b.WriteString(c.notesWritePreview(ctx, a))
	v.write(b.String())
	flushInput(v.fd)
	v.keys.discard()
	asked := time.Now()
	question := fmt.Sprintf("approve %s (%s %s)? [y/N] (a: always) ", termtext.Line(a.Approval), termtext.Line(a.Tool), promptSubject(a.Subject))
	for {
		v.write(question)
		key, gone := c.awaitKey(ctx, v, a, asked)
		if gone {
			v.write("\n")
			v.activity(c.answeredElsewhere(a))
			return answerElsewhere
		}
		switch key {
		case 'y', 'Y':
			v.write("y\n")
			c.swallow(v, "es")
			return answerApprove
		case 'a', 'A':
			v.write("a\n")
			if vd, done := c.always(ctx, v, a, asked); done {
				return vd
			}
		default:
			v.write("n\nnot approved\n")
			if key == 'n' || key == 'N' {
				c.swallow(v, "o")
			}
			return answerRefuse
		}
	}
}

// awaitKey waits for a key that answers, or for a to stop being pending.
func (c *chatter) awaitKey(ctx context.Context, v *termView, a wire.Approval, asked time.Time) (byte, bool) {
	poll := time.NewTicker(pollApprovals)
	defer poll.Stop()
	for {
		select {
		case k, ok := <-v.keys.chunks:
			if !ok {
				return ctrlD, false
			}
			if k.at.Before(asked) {
				continue
			}
			for i, key := range k.data {
				switch key {
				case 'y', 'Y', 'a', 'A', 'n', 'N', '\r', '\n', ctrlC, ctrlD, 0x1b:
					v.keys.keep(k.data[i+1:])
					return key, false
				}
			}
		case <-poll.C:
			if !c.stillPending(ctx, a.Approval) {
				return 0, true
			}
		case <-ctx.Done():
			return ctrlC, false
		}
	}
}

// swallow drops the rest of a word typed out ("yes", "no") and the Enter
// after it, for an owner used to typing the whole answer: one key
// answered, and the rest must not become a message.
func (c *chatter) swallow(v *termView, rest string) {
	want := rest + "\r"
	deadline := time.After(500 * time.Millisecond)
	for want != "" {
		v.keys.mu.Lock()
		for len(v.keys.pending) > 0 && want != "" && (v.keys.pending[0] == want[0] || v.keys.pending[0] == '\r') {
			if v.keys.pending[0] == '\r' {
				want = ""
			} else {
				want = want[1:]
			}
			v.keys.pending = v.keys.pending[1:]
		}
		stop := want == "" || len(v.keys.pending) > 0
		v.keys.mu.Unlock()
		if stop {
			return
		}
		select {
		case k, ok := <-v.keys.chunks:
			if !ok {
				return
			}
			v.keys.keep(k.data)
		case <-deadline:
			return
		}
	}
}

// stillPending reports whether brokerd still lists the approval; when it
// cannot be asked, the prompt stays.
func (c *chatter) stillPending(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := callAdmin(ctx, c.paths, wire.ApprovalList{})
	list, ok := res.(wire.ApprovalListResult)
	if err != nil || !ok {
		return true
	}
	for _, p := range list.Approvals {
		if p.Approval == id {
			return true
		}
	}
	return false
}

// answeredElsewhere says who answered a and how, from the audit log, where
// brokerd records the answer before it acts on it. The approver's name
// is a peer's text (a Mattermost user id) and is shown through the
// sanitizer, after words the peer cannot choose.
func (c *chatter) answeredElsewhere(a wire.Approval) string {
	lead := fmt.Sprintf("approval %s was answered elsewhere", a.Approval)
	// brokerd takes the approval off its list before it records the
	// answer, so the record may be a moment behind.
	for range 10 {
		line, err := c.auditedAnswer(a, lead)
		if err != nil {
			return lead + " (boxmaker approve, Mattermost) or expired; the audit log does not say which here: " + err.Error()
		}
		if line != "" {
			return line
		}
		time.Sleep(200 * time.Millisecond)
	}
	return lead + " (boxmaker approve, Mattermost), or it was withdrawn"
}

// auditedAnswer is the line for the audit record of a's call, "" if none yet.
func (c *chatter) auditedAnswer(a wire.Approval, lead string) (string, error) {
	lines, err := audit.Tail(c.paths.Join("audit"), 50)
	if err != nil {
		return "", err
	}
	for i := len(lines) - 1; i >= 0; i-- {
		e, err := wire.DecodeAuditEntry([]byte(lines[i]))
		r, ok := e.(wire.AuditRecord)
		if err != nil || !ok || r.Session != a.Session || r.Call != a.Call {
			continue
		}
		switch d := r.Decision.(type) {
		case wire.DecisionApproved:
			how := ""
			if d.Post != nil {
				how = " on Mattermost post " + termtext.Line(*d.Post)
			}
			return fmt.Sprintf("%s: approved by %s%s", lead, termtext.Line(d.Approver), how), nil
		case wire.DecisionDenied:
			if d.Reason == wire.ApprovalExpired {
				return fmt.Sprintf("approval %s expired before anyone answered", a.Approval), nil
			}
			// brokerd's record of a refusal does not name who refused.
			return fmt.Sprintf("%s: %s (boxmaker deny or Mattermost)", lead, d.Reason), nil
		}
	}
	return "", nil
}

// always shows the grant file that would let exactly a's call run from now
// on and, on a second y, writes it into the owner's grants and approves.
// done is false when the owner goes back to the first question.
func (c *chatter) always(ctx context.Context, v *termView, a wire.Approval, asked time.Time) (vd promptAnswer, done bool) {
	g, err := deriveAlways(c.paths.Grants, a)
	if err != nil {
		v.activity("no always-allow grant for this call: " + err.Error())
		return answerRefuse, false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "this grant, %s, would let exactly this call run from now on without asking:\n", termtext.Line(g.path))
	for _, line := range strings.Split(strings.TrimRight(string(g.text), "\n"), "\n") {
		b.WriteString("  " + termtext.Line(line) + "\n")
	}
	b.WriteString("write it and approve? [y/N] ")
	v.write(b.String())
	key, gone := c.awaitKey(ctx, v, a, asked)
	if gone {
		v.write("\n")
		v.activity(c.answeredElsewhere(a))
		return answerElsewhere, true
	}
	if key != 'y' && key != 'Y' {
		v.write("n\nnot written\n")
		return answerRefuse, false
	}
	v.write("y\n")
	c.swallow(v, "es")
	// Written once brokerd has decided this call: it decides again when
	// approved and runs only under the grant it asked for, so a new auto
	// grant there now would make it refuse the change.
	c.grantAfter[a.Call] = g
	return answerApprove, true
}

// writeGrantAfter writes the always-allow grant waiting for call, if any.
func (c *chatter) writeGrantAfter(call wire.CallID) {
	g, ok := c.grantAfter[call]
	if !ok {
		return
	}
	delete(c.grantAfter, call)
	if err := g.write(); err != nil {
		c.view.activity("the grant was not written: " + err.Error())
		return
	}
	c.view.activity(fmt.Sprintf("wrote grant %s; brokerd reads it on the next call. To undo it: rm %s", g.id, g.path))
}

// writeGrantsLeft writes the grants whose calls' results never came (the
// turn failed or was cancelled): the owner said yes to them.
func (c *chatter) writeGrantsLeft() {
	for call := range c.grantAfter {
		c.writeGrantAfter(call)
	}
}

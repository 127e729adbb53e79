package bxctl

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"boxmaker/wire"
)

// sessionList asks loopd for its sessions on the chat's connection.
func (c *chatter) sessionList(ctx context.Context) ([]wire.SessionInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.loop.Call(ctx, wire.SessionList{}, nil)
	if err != nil && connectionBroke(err) {
		if rerr := c.reconnect(ctx, err); rerr != nil {
			return nil, rerr
		}
		res, err = c.loop.Call(ctx, wire.SessionList{}, nil)
	}
	if err != nil {
		return nil, loopdSaid(err)
	}
	list, ok := res.(wire.SessionListResult)
	if !ok {
		return nil, fmt.Errorf("loopd answered %s", wire.KindOf(res))
	}
	return list.Sessions, nil
}

func (c *chatter) showSessions(ctx context.Context, v *termView) error {
	list, err := c.sessionList(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		v.write("no sessions\n")
		return nil
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tEPOCH\tTURNS\tUPDATED")
	for _, s := range list {
		mark := ""
		if c.session != nil && s.Session == *c.session {
			mark = "  (this one)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s%s\n", s.Session, s.Epoch, s.Turns, s.Updated, mark)
	}
	tw.Flush()
	v.write(b.String())
	return nil
}

// resume goes on in a session that exists: a mistyped name is an error,
// not a new session.
func (c *chatter) resume(ctx context.Context, v *termView, name string) error {
	if name == "" {
		return fmt.Errorf("/resume takes a session NAME (see /sessions)")
	}
	id, err := wire.ParseSessionID(name)
	if err != nil {
		return fmt.Errorf("/resume: %v", err)
	}
	list, err := c.sessionList(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		if s.Session == id {
			c.session, c.shown = &id, id
			v.activity(fmt.Sprintf("session %s: the next message goes on there (turns so far: %d)", id, s.Turns))
			return nil
		}
	}
	return fmt.Errorf("/resume: loopd has no session %s (see /sessions)", id)
}

func (c *chatter) showStatus(ctx context.Context, v *termView) error {
	model := "the configured model server"
	if scriptedModel(c.paths) {
		model = "the SCRIPTED MODEL (fixed replies, not a language model)"
	}
	lines := []string{"home " + c.paths.Home, "model: " + model}
	if c.session == nil {
		lines = append(lines, "session: none yet (the next message starts one)")
	} else if st := c.sessionState(); st != nil {
		trust := "trusted"
		if st.Untrusted {
			trust = "has read untrusted data"
		}
		lines = append(lines, fmt.Sprintf("session %s: taint %s, %s", c.session, st.Taint, trust))
	} else {
		lines = append(lines, fmt.Sprintf("session %s (brokerd does not say its taint)", c.session))
	}
	if list, err := c.approvalList(ctx); err == nil {
		lines = append(lines, fmt.Sprintf("approvals waiting: %d (/approvals)", len(list)))
	} else {
		lines = append(lines, "brokerd: "+err.Error())
	}
	v.write(strings.Join(lines, "\n") + "\n")
	return nil
}

func (c *chatter) approvalList(ctx context.Context) ([]wire.Approval, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := callAdmin(ctx, c.paths, wire.ApprovalList{})
	if err != nil {
		return nil, fmt.Errorf("brokerd is not answering: %w", err)
	}
	list, ok := res.(wire.ApprovalListResult)
	if !ok {
		return nil, fmt.Errorf("brokerd answered %s", wire.KindOf(res))
	}
	return list.Approvals, nil
}

func (c *chatter) showApprovals(ctx context.Context, v *termView) error {
	list, err := c.approvalList(ctx)
	if err != nil {
		return err
	}
	var b strings.Builder
	writeApprovals(&b, list)
	if len(list) > 0 {
		b.WriteString("answer with: boxmaker approve ID, or boxmaker deny ID\n")
	}
	v.write(b.String())
	return nil
}

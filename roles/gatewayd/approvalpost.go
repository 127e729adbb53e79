package gatewayd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"boxmaker/roles/gatewayd/internal/mattermost"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"
)

// approvalProp marks the bot's approval posts with the approval id, so that
// a gatewayd that restarted finds its post again instead of posting twice.
const approvalProp = "boxmaker_approval"

// maxArgumentRunes is how much of the arguments a post shows; a post holds
// at most 16383 runes, and the full text stays with brokerd.
const maxArgumentRunes = 12000

// place posts the approval, retrying while Mattermost is down and the
// approval is still pending, then reads the answers already on the post.
func (as *approvals) place(ctx context.Context, a *approval) {
	g := as.g
	select {
	case <-g.ready:
	case <-ctx.Done():
		as.placed(ctx, a, mattermost.Post{})
		return
	}
	bo := g.backoff()
	for {
		if !as.stillPending(a) {
			as.placed(ctx, a, mattermost.Post{})
			return
		}
		post, err := as.findOrCreate(ctx, a)
		if err == nil {
			as.placed(ctx, a, post)
			as.catchUp(ctx, a)
			return
		}
		g.log.Printf("approval %s: not posted yet (%v); it stays pending", a.req.Approval, err)
		if bo.Wait(ctx) != nil {
			as.placed(ctx, a, mattermost.Post{})
			return
		}
	}
}

func (as *approvals) stillPending(a *approval) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return a.state == statePending
}

// placed records the post (or, when zero, that posting stopped) and brings
// it up to date if the approval changed meanwhile.
func (as *approvals) placed(ctx context.Context, a *approval, post mattermost.Post) {
	as.mu.Lock()
	a.placing = false
	if post.ID != "" {
		a.post = post
		as.byPost[post.ID] = a
	}
	stale := post.ID != "" && a.state != statePending
	as.mu.Unlock()
	if post.ID != "" {
		as.g.log.Printf("approval %s: posted as %s in channel %s", a.req.Approval, post.ID, post.ChannelID)
	}
	if stale {
		as.edit(ctx, a)
	}
}

// findOrCreate returns the approval's post: the one a previous gatewayd
// made, or a new one.
func (as *approvals) findOrCreate(ctx context.Context, a *approval) (mattermost.Post, error) {
	g := as.g
	channel, root, err := as.target(ctx, a.req.Session)
	if err != nil {
		return mattermost.Post{}, err
	}
	var posts []mattermost.Post
	if root != "" {
		posts, err = g.mm.Thread(ctx, root)
	} else {
		posts, err = g.mm.PostsSince(ctx, channel, a.req.Expires.Time().Add(-24*time.Hour).UnixMilli())
	}
	if err != nil {
		return mattermost.Post{}, err
	}
	for _, p := range posts {
		if p.UserID == g.bot.ID && p.Prop(approvalProp) == a.req.Approval {
			return p, nil
		}
	}
	as.mu.Lock()
	text := approvalText(a, g.cfg.ApproveEmoji, g.cfg.DenyEmoji)
	as.mu.Unlock()
	return g.mm.CreatePost(ctx, mattermost.Post{ChannelID: channel, RootID: root, Message: text,
		Props: map[string]any{approvalProp: a.req.Approval}})
}

// target is where an approval goes: the thread of its session when the
// session is one of gatewayd's threads in a channel it listens in, else a
// new thread in the owner's direct channel, which nobody else can read.
func (as *approvals) target(ctx context.Context, session wire.SessionID) (channel, root string, err error) {
	g := as.g
	if id, ok := rootOfSession(session); ok {
		p, err := g.mm.GetPost(ctx, id)
		switch {
		case err == nil && (slices.Contains(g.cfg.Channels, p.ChannelID) || g.isDM(p.ChannelID)):
			return p.ChannelID, p.ThreadRoot(), nil
		case err != nil && !mattermost.IsClientError(err):
			return "", "", err
		}
	}
	if dm := g.ownerDM(); dm != "" {
		return dm, "", nil
	}
	return "", "", errors.New("no direct channel with the owner (the first allow_users entry)")
}

// catchUpAll re-reads the answers on every pending approval's post.
func (as *approvals) catchUpAll(ctx context.Context) {
	as.mu.Lock()
	var list []*approval
	for _, a := range as.byPost {
		if a.state == statePending {
			list = append(list, a)
		}
	}
	as.mu.Unlock()
	for _, a := range list {
		as.catchUp(ctx, a)
	}
}

// catchUp reads the reactions on an approval's post and the replies in its
// thread since it was posted, and takes any answer among them, oldest
// first, as if it had come as an event.
func (as *approvals) catchUp(ctx context.Context, a *approval) {
	g := as.g
	as.mu.Lock()
	post := a.post
	as.mu.Unlock()
	reactions, err := g.mm.Reactions(ctx, post.ID)
	if err != nil {
		g.log.Printf("approval %s: reading its reactions: %v", a.req.Approval, err)
	}
	thread, err := g.mm.Thread(ctx, post.ID)
	if err != nil {
		g.log.Printf("approval %s: reading its thread: %v", a.req.Approval, err)
	}
	type answer struct {
		at  int64
		run func()
	}
	var answers []answer
	for _, r := range reactions {
		answers = append(answers, answer{r.CreateAt, func() { g.onReaction(ctx, r) }})
	}
	for _, p := range thread {
		if p.CreateAt > post.CreateAt {
			answers = append(answers, answer{p.CreateAt, func() { g.replayAnswer(ctx, p) }})
		}
	}
	slices.SortStableFunc(answers, func(x, y answer) int { return cmp.Compare(x.at, y.at) })
	for _, ans := range answers {
		ans.run()
	}
}

// replayAnswer takes a post read back from a thread only when it is an
// answer: other posts there are loopd's business and arrive as events.
func (g *gateway) replayAnswer(ctx context.Context, p mattermost.Post) {
	if _, _, ok := parseAnswer(p.Message); !ok || g.classify(p, g.isDM(p.ChannelID)) != "" {
		return
	}
	if !g.seenPosts.Add(p.ID) && !g.unanswered.Remove(p.ID) {
		return
	}
	g.approvals.answerReply(ctx, p)
}

// edit rewrites the approval's post to say where it stands, in the
// background; edits of one post happen one at a time, each with the state
// as it is when it runs.
func (as *approvals) edit(ctx context.Context, a *approval) {
	as.g.work.Go(func() {
		a.editMu.Lock()
		defer a.editMu.Unlock()
		as.mu.Lock()
		id, text := a.post.ID, approvalText(a, as.g.cfg.ApproveEmoji, as.g.cfg.DenyEmoji)
		as.mu.Unlock()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := retry(ctx, as.g, "editing approval post "+id, func() (mattermost.Post, error) {
			return as.g.mm.PatchPost(ctx, id, text)
		}); err != nil {
			as.g.log.Printf("approval %s: its post %s was not updated: %v", a.req.Approval, id, err)
		}
	})
}

// maxSubjectRunes is the longest subject a post shows; with
// maxArgumentRunes and the rest of the text it stays under 16383.
const maxSubjectRunes = 2000

// offeredHere reports whether the approval can be shown whole in a post: its
// subject and its arguments, every character. One that cannot is not
// offered on Mattermost at all (an owner must never approve what they were
// shown only part of); its post says to answer it with boxmaker approvals.
func offeredHere(r wire.ApprovalRequest) bool {
	return utf8.RuneCountInString(shownSubject(r)) <= maxSubjectRunes && !strings.ContainsAny(r.Subject, "\r\n") &&
		utf8.RuneCountInString(shownArguments(r)) <= maxArgumentRunes
}

// shownSubject and shownArguments are the subject and arguments as a post
// shows them: every character a reader could not see (a bidi override, a
// zero-width or other default ignorable character) as a visible escape, as
// a terminal shows them, so that notes/to<U+034F>do.md cannot pass for
// todo.md. The code span and block around them keep them from rendering.
func shownSubject(r wire.ApprovalRequest) string { return termtext.Line(r.Subject) }

func shownArguments(r wire.ApprovalRequest) string { return termtext.Clean(r.Arguments) }

// approvalText is the approval as the owner reads it: the subject first and
// whole, then grant, taint, expiry and id, the arguments whole as quoted
// data in a block they cannot close, and how to answer or what became of
// it. Callers hold the approvals' mu.
func approvalText(a *approval, approveEmoji, denyEmoji string) string {
	r := a.req
	if !offeredHere(r) {
		return notOfferedText(a)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#### Approval needed: %s %s\n", codeSpan(oneLine(r.Tool, 64)), codeSpan(shownSubject(r)))
	trust := ""
	if r.SessionUntrusted {
		trust = " (has read untrusted data)"
	}
	fmt.Fprintf(&b, "**Grant** %s · **session taint** %s%s · **session** %s · **call** %d\n",
		codeSpan(oneLine(r.Grant, 64)), codeSpan(r.SessionTaint.String()), trust, codeSpan(r.Session.String()), r.Call)
	fmt.Fprintf(&b, "**Expires** %s · **approval** %s\n", r.Expires, codeSpan(oneLine(r.Approval, 128)))
	b.WriteString("**Arguments** (quoted data from the model: read them, do not follow them):\n")
	b.WriteString(codeBlock(shownArguments(r)) + "\n")
	if a.state == statePending {
		fmt.Fprintf(&b, "\nReact with :%s: to approve or :%s: to deny, or reply `approve` or `deny` in this thread.", approveEmoji, denyEmoji)
	} else {
		b.WriteString("\n" + a.status())
	}
	return b.String()
}

// notOfferedText says an approval exists and where to answer it, without
// offering an answer here.
func notOfferedText(a *approval) string {
	r := a.req
	var b strings.Builder
	fmt.Fprintf(&b, "#### Approval needed: %s (too long to show whole here)\n", codeSpan(oneLine(r.Tool, 64)))
	fmt.Fprintf(&b, "**Grant** %s · **session** %s · **call** %d · **approval** %s\n",
		codeSpan(oneLine(r.Grant, 64)), codeSpan(r.Session.String()), r.Call, codeSpan(oneLine(r.Approval, 128)))
	fmt.Fprintf(&b, "Its subject (%d characters) or arguments (%d characters) do not fit in a post, so it cannot be answered here. "+
		"Answer it on the host: `boxmaker approvals` shows it whole, then `boxmaker approve %s` or `boxmaker deny %s`.",
		utf8.RuneCountInString(r.Subject), utf8.RuneCountInString(r.Arguments), oneLine(r.Approval, 128), oneLine(r.Approval, 128))
	if a.state != statePending {
		b.WriteString("\n" + a.status())
	}
	return b.String()
}

// status says what became of an approval. Callers hold the approvals' mu.
func (a *approval) status() string {
	switch a.state {
	case stateDecided:
		return fmt.Sprintf("**%s** by %s (%s).", strings.ToUpper(verdict(a.decision.Approve)[:1])+verdict(a.decision.Approve)[1:], a.decision.Approver, a.how)
	case stateWithdrawn:
		return "**No longer pending**: it was answered elsewhere (for example with `boxmaker approve`) or withdrawn."
	case stateExpired:
		return fmt.Sprintf("**Expired** at %s, unanswered; the call was not run.", a.req.Expires)
	}
	return "**Pending.**"
}

func statusWord(s approvalState) string {
	return [...]string{"pending", "decided", "withdrawn (answered elsewhere)", "expired"}[s]
}

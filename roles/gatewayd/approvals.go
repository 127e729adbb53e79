package gatewayd

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/gatewayd/internal/mattermost"
	"boxmaker/wire"
)

// approvalState is where an approval stands, as gatewayd knows it.
type approvalState int

const (
	statePending   approvalState = iota
	stateDecided                 // answered here; the decision goes to brokerd
	stateWithdrawn               // brokerd closed the request: answered elsewhere
	stateExpired                 // its expiry passed unanswered
)

// approval is one approval request and its post.
type approval struct {
	req      wire.ApprovalRequest
	state    approvalState
	decision wire.ApprovalDecision
	how      string                     // "reaction :+1:" or "reply", for the post
	post     mattermost.Post            // zero until placed
	placing  bool                       // a goroutine is posting it
	waiter   chan wire.ApprovalDecision // the request brokerd holds open; nil when none
	ended    time.Time                  // when it stopped being pending
	editMu   sync.Mutex                 // edits of the post, one at a time
}

// approvals is every approval gatewayd knows, pending or recently ended.
// The state changes under mu, so the first answer is the only one.
type approvals struct {
	g      *gateway
	mu     sync.Mutex
	byID   map[string]*approval
	byPost map[string]*approval
	wg     sync.WaitGroup
}

// keepEnded is how long an ended approval is remembered, to answer late
// reactions and replies with what became of it.
const keepEnded = time.Hour

// expiryGrace is how long after the expiry gatewayd still holds a request
// that brokerd has not closed.
const expiryGrace = time.Minute

func newApprovals(g *gateway) *approvals {
	return &approvals{g: g, byID: map[string]*approval{}, byPost: map[string]*approval{}}
}

func (as *approvals) wait() { as.wg.Wait() }

// await holds one approval_request until it is answered here (the decision
// and true), brokerd closes it (gone), its expiry passes, or ctx ends.
func (as *approvals) await(ctx context.Context, req wire.ApprovalRequest, gone <-chan struct{}) (wire.ApprovalDecision, bool) {
	a, ch, earlier, decided := as.offer(ctx, req)
	if decided {
		return earlier, true
	}
	expiry := time.NewTimer(time.Until(req.Expires.Time()))
	defer expiry.Stop()
	var giveUp <-chan time.Time
	for {
		select {
		case d := <-ch:
			return d, true
		case <-gone:
			as.end(ctx, a, ch, stateWithdrawn)
			return wire.ApprovalDecision{}, false
		case <-ctx.Done():
			as.end(ctx, a, ch, statePending)
			return wire.ApprovalDecision{}, false
		case <-expiry.C:
			as.end(ctx, a, nil, stateExpired)
			giveUp = time.After(expiryGrace)
		case <-giveUp:
			as.end(ctx, a, ch, stateExpired)
			return wire.ApprovalDecision{}, false
		}
	}
}

// offer registers a request (again, after brokerd or gatewayd restarted)
// and starts posting it if it has no post yet. A request answered here
// before is answered again at once.
func (as *approvals) offer(ctx context.Context, req wire.ApprovalRequest) (*approval, chan wire.ApprovalDecision, wire.ApprovalDecision, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.prune()
	a := as.byID[req.Approval]
	if a == nil {
		a = &approval{req: req}
		as.byID[req.Approval] = a
		as.g.log.Printf("approval %s for %s in session %s: pending", req.Approval, req.Tool, req.Session)
	} else {
		as.g.log.Printf("approval %s: offered again", req.Approval)
	}
	a.req = req
	if a.state == stateDecided {
		return a, nil, a.decision, true
	}
	reopened := a.state != statePending && time.Now().Before(req.Expires.Time())
	if reopened {
		a.state = statePending
	}
	a.waiter = make(chan wire.ApprovalDecision, 1)
	switch {
	case a.post.ID == "" && !a.placing:
		a.placing = true
		as.wg.Go(func() { as.place(ctx, a) })
	case reopened && a.post.ID != "":
		as.edit(ctx, a)
	}
	return a, a.waiter, wire.ApprovalDecision{}, false
}

// end lets go of brokerd's request ch and moves a pending approval to
// state; statePending only lets go. A request that a newer one for the same
// approval replaced (brokerd reconnected) changes nothing. ch nil is the
// expiry, which holds whatever request is open.
func (as *approvals) end(ctx context.Context, a *approval, ch chan wire.ApprovalDecision, state approvalState) {
	as.mu.Lock()
	if ch != nil {
		if a.waiter != ch {
			id := a.req.Approval
			as.mu.Unlock()
			as.g.log.Printf("approval %s: %s", id, replacedRequestEnded)
			return
		}
		a.waiter = nil
	}
	changed := a.state == statePending && state != statePending
	if changed {
		if state == stateWithdrawn && !time.Now().Before(a.req.Expires.Time()) {
			state = stateExpired
		}
		a.state, a.ended = state, time.Now()
		as.g.log.Printf("approval %s: %s", a.req.Approval, statusWord(state))
	}
	placed := a.post.ID != ""
	as.mu.Unlock()
	if changed && placed {
		as.edit(ctx, a)
	}
}

// replacedRequestEnded is logged when a request that a newer one replaced
// lets go, which changes nothing; tests wait for it as the sign that the
// old request was handled.
const replacedRequestEnded = "a request that a newer offer replaced ended; the newer one holds it"

// prune forgets approvals that ended long ago. Callers hold mu.
func (as *approvals) prune() {
	for id, a := range as.byID {
		if a.state != statePending && a.waiter == nil && time.Since(a.ended) > keepEnded {
			delete(as.byID, id)
			delete(as.byPost, a.post.ID)
		}
	}
}

// decide takes an answer from an allowlisted user. The first one on a
// pending approval decides; any later one is told what became of it.
func (as *approvals) decide(ctx context.Context, a *approval, approve bool, user, how string) {
	if !offeredHere(a.req) {
		as.g.log.Printf("approval %s: an answer by %s (%s) ignored: it is too long to show whole here", a.req.Approval, user, how)
		as.g.say(ctx, a.post.ChannelID, a.post.ThreadRoot(), "This approval cannot be answered here, since it is too long to show whole in a post: answer it on the host with `boxmaker approvals`.")
		return
	}
	as.mu.Lock()
	if a.state == statePending && !time.Now().Before(a.req.Expires.Time()) {
		a.state, a.ended = stateExpired, time.Now()
	}
	if a.state != statePending {
		note := "This approval was already decided: " + a.status()
		as.mu.Unlock()
		as.g.say(ctx, a.post.ChannelID, a.post.ThreadRoot(), note)
		return
	}
	d := wire.ApprovalDecision{Approval: a.req.Approval, Approve: approve, Approver: "mm:" + user, Post: a.post.ID}
	a.state, a.decision, a.how, a.ended = stateDecided, d, how, time.Now()
	if a.waiter != nil {
		a.waiter <- d // buffered, and the only send: the state is no longer pending
		a.waiter = nil
	}
	as.mu.Unlock()
	as.g.log.Printf("approval %s: %s by %s on post %s (%s)", d.Approval, verdict(approve), d.Approver, d.Post, how)
	as.edit(ctx, a)
}

// answerReaction decides on a reaction to an approval's own post, when it
// is from an allowlisted user and one of the two emoji. A reaction carries
// no integration marks to check (see onReaction).
func (as *approvals) answerReaction(ctx context.Context, r mattermost.Reaction) {
	as.mu.Lock()
	a := as.byPost[r.PostID]
	as.mu.Unlock()
	g := as.g
	// Only reactions on a known approval post are remembered: one that
	// comes before gatewayd has recorded its new post is read again by
	// the catch-up that follows.
	switch {
	case a == nil:
		return // a reaction on any other post means nothing
	case !g.seenReact.Add(r.UserID + "|" + r.PostID + "|" + r.EmojiName):
		return // handled already, from the stream or a read-back
	case r.UserID == g.bot.ID || !slices.Contains(g.cfg.AllowUsers, r.UserID):
		g.log.Printf("approval %s: a reaction from %s, who is not in allow_users, ignored", a.req.Approval, r.UserID)
	case r.EmojiName == g.cfg.ApproveEmoji:
		as.decide(ctx, a, true, r.UserID, "reaction :"+r.EmojiName+":")
	case r.EmojiName == g.cfg.DenyEmoji:
		as.decide(ctx, a, false, r.UserID, "reaction :"+r.EmojiName+":")
	}
}

// answerReply decides on a post that reads "approve" or "deny" (and
// optionally the approval id) in the thread of an approval posted before
// it, and reports whether the post was such an answer. An answer never
// reaches loopd, even when nothing in its thread waits for one: the model
// must not read "approve" as the owner's word.
func (as *approvals) answerReply(ctx context.Context, p mattermost.Post) bool {
	approve, id, ok := parseAnswer(p.Message)
	if !ok {
		return false
	}
	as.mu.Lock()
	var inThread, pending []*approval
	for _, a := range as.byPost {
		if a.post.ThreadRoot() == p.ThreadRoot() && a.post.CreateAt < p.CreateAt && (id == "" || strings.EqualFold(id, a.req.Approval)) {
			inThread = append(inThread, a)
			if a.state == statePending {
				pending = append(pending, a)
			}
		}
	}
	as.mu.Unlock()
	slices.SortFunc(inThread, func(x, y *approval) int { return cmp.Compare(y.post.CreateAt, x.post.CreateAt) })
	switch {
	case len(pending) == 1:
		as.decide(ctx, pending[0], approve, p.UserID, "reply")
	case len(pending) > 1:
		as.g.say(ctx, p.ChannelID, p.ThreadRoot(), "Several approvals wait in this thread; reply `approve <id>` or `deny <id>` with the approval's id.")
	case len(inThread) > 0:
		as.decide(ctx, inThread[0], approve, p.UserID, "reply")
	default:
		// Remembered, so that the catch-up after an approval is posted
		// still takes it if it raced ahead of the post being recorded.
		as.g.unanswered.Add(p.ID)
		as.g.say(ctx, p.ChannelID, p.ThreadRoot(), "No approval waits for an answer in this thread; nothing was approved or denied.")
	}
	return true
}

// parseAnswer reads "approve", "deny", "approve <id>" or "deny <id>",
// after any @mentions, in any case, with trailing punctuation.
func parseAnswer(msg string) (approve bool, id string, ok bool) {
	words := strings.Fields(msg)
	for len(words) > 0 && strings.HasPrefix(words[0], "@") {
		words = words[1:]
	}
	if len(words) == 0 || len(words) > 2 {
		return false, "", false
	}
	switch strings.ToLower(strings.TrimRight(words[0], ".!")) {
	case "approve":
		approve = true
	case "deny":
	default:
		return false, "", false
	}
	if len(words) == 2 {
		id = strings.TrimRight(words[1], ".!")
	}
	return approve, id, true
}

func verdict(approve bool) string {
	if approve {
		return "approved"
	}
	return "denied"
}

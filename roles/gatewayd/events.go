package gatewayd

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"boxmaker/roles/gatewayd/internal/mattermost"
)

// Why a post is not for the bot; each is counted in the log.
const (
	ignoredOwn         = "own"         // the bot's own post
	ignoredBot         = "bot"         // another bot's post
	ignoredSystem      = "system"      // a system message (type system_*)
	ignoredIntegration = "integration" // made by an integration, under whoever's id (see classify)
	ignoredStranger    = "stranger"    // a user not in allow_users
	ignoredChannel     = "channel"     // a channel not in channels, and not a DM
	ignoredEdit        = "edit"        // post_edited: only new posts count
)

// Event handles one event of the stream (mattermost.Handler).
func (g *gateway) Event(ctx context.Context, ev mattermost.Event) {
	switch ev.Event {
	case "posted":
		if p, err := ev.Post(); err == nil {
			g.onPost(ctx, p, ev.String("channel_type") == "D")
		} else {
			g.log.Printf("a posted event whose post does not decode: %v", err)
		}
	case "post_edited":
		if p, err := ev.Post(); err == nil && p.UserID != g.bot.ID {
			g.ignore(p, ignoredEdit)
		}
	case "reaction_added":
		if r, err := ev.Reaction(); err == nil {
			g.onReaction(ctx, r)
		}
	}
}

// backfillTime bounds the reads of one backfill.
const backfillTime = 2 * time.Minute

// Lost reads back what a failed resume may have lost (mattermost.Handler).
func (g *gateway) Lost(ctx context.Context) {
	since := g.mark.Load()
	g.log.Printf("the event stream could not resume; reading back posts since %d", since)
	// The stream waits while this runs, so the reads are bounded; the
	// turns they start run under ctx itself.
	readCtx, cancel := context.WithTimeout(ctx, backfillTime)
	defer cancel()
	n := 0
	for _, ch := range g.watchedChannels() {
		posts, err := retry(readCtx, g, "reading back channel "+ch, func() ([]mattermost.Post, error) {
			return g.mm.PostsSince(readCtx, ch, since-1)
		})
		if err != nil {
			g.log.Printf("reading back channel %s: %v; posts there since %d may be missed", ch, err, since)
			continue
		}
		for _, p := range posts {
			// Older posts that changed since are edits of posts seen before.
			if p.CreateAt >= since && p.DeleteAt == 0 {
				n++
				g.onPost(ctx, p, g.isDM(ch))
			}
		}
	}
	g.approvals.catchUpAll(ctx)
	g.log.Printf("read back %d posts; answers on pending approvals re-read", n)
}

// onPost handles a new post once: an answer to an approval, a message for
// loopd, or something to ignore and count.
func (g *gateway) onPost(ctx context.Context, p mattermost.Post, directMessage bool) {
	if p.ID == "" || !g.seenPosts.Add(p.ID) {
		return
	}
	g.advance(p.CreateAt)
	if reason := g.classify(p, directMessage); reason != "" {
		g.ignore(p, reason)
		return
	}
	if g.approvals.answerReply(ctx, p) {
		return
	}
	g.chats.enqueue(ctx, p)
}

// classify says why a post is not for the bot, or "" when it is. Every way
// a post comes in passes it: the event stream and the read-back after a
// lost stream (onPost), and the replies an approval's catch-up reads from
// its thread (replayAnswer).
//
// A post under an allowlisted user id is that user's own only when it
// carries no integration mark. Mattermost posts what an incoming webhook
// receives under the id of whoever created the webhook (and a payload with
// "channel":"@<bot>" lands in that person's direct channel with the bot);
// slash command responses, outgoing webhook replies, plugins and OAuth apps
// post under a person's id too. What tells them apart is the props the
// server sets and a post type (mattermost.Post.IntegrationMarks).
//
// An integration post is logged here, once, rather than by the caller:
// replayAnswer drops what classify rejects without a word.
//
// WARNING: the marks are tested before the cases that return "", so that
// no allowlisted id or watched channel lets a marked post through; the
// TestIntegration* tests (one per way in) prove it.
func (g *gateway) classify(p mattermost.Post, directMessage bool) string {
	switch {
	case p.UserID == g.bot.ID:
		return ignoredOwn
	case strings.HasPrefix(p.Type, "system_"):
		return ignoredSystem
	case p.FromBot():
		return ignoredBot
	case len(p.IntegrationMarks()) > 0:
		g.ignore(p, ignoredIntegration)
		return ignoredIntegration
	case !slices.Contains(g.cfg.AllowUsers, p.UserID):
		return ignoredStranger
	case slices.Contains(g.cfg.Channels, p.ChannelID) || g.isDM(p.ChannelID):
		return ""
	case directMessage:
		// The server sends the bot only its own direct channels, so this
		// is a DM from an allowlisted user that login did not resolve.
		g.mu.Lock()
		g.extraDM[p.ChannelID] = true
		g.mu.Unlock()
		return ""
	}
	return ignoredChannel
}

func (g *gateway) isDM(channel string) bool {
	if _, ok := g.dms[channel]; ok {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.extraDM[channel]
}

// watchedChannels lists where a backfill reads: the configured channels and
// the direct channels with allowlisted users.
func (g *gateway) watchedChannels() []string {
	out := slices.Clone(g.cfg.Channels)
	out = append(out, slices.Collect(maps.Keys(g.dms))...)
	g.mu.Lock()
	out = append(out, slices.Collect(maps.Keys(g.extraDM))...)
	g.mu.Unlock()
	slices.Sort(out)
	return slices.Compact(out)
}

// ignore counts a post that is not for the bot, in a log line that names
// its id and why (never its text). The bot's own posts are only counted.
// An integration post is counted and logged once, with the marks that gave
// it away (their names, never their values), however often it is read.
func (g *gateway) ignore(p mattermost.Post, reason string) {
	why := reason
	if reason == ignoredIntegration {
		if !g.ignoredMarked.Add(p.ID) {
			return
		}
		why += ", marked by " + strings.Join(p.IntegrationMarks(), ", ")
	}
	g.mu.Lock()
	g.ignored[reason]++
	var counts []string
	for _, r := range slices.Sorted(maps.Keys(g.ignored)) {
		counts = append(counts, fmt.Sprintf("%s %d", r, g.ignored[r]))
	}
	g.mu.Unlock()
	if reason != ignoredOwn {
		g.log.Printf("ignored post %s in %s from %s: %s (ignored so far: %s)", p.ID, p.ChannelID, p.UserID, why, strings.Join(counts, ", "))
	}
}

// advance moves the backfill mark to a post's time.
func (g *gateway) advance(createAt int64) {
	for {
		old := g.mark.Load()
		if createAt <= old || g.mark.CompareAndSwap(old, createAt) {
			return
		}
	}
}

// onReaction handles a reaction; only one on an approval's post can mean
// anything, and that one only once.
//
// A reaction carries no integration marks: the server's Reaction has no
// props and no type, and incoming webhooks, outgoing webhook replies and
// slash command responses make posts, never reactions. So a reaction under
// an allowlisted id is taken as that person's, as the Mattermost clients
// make them. What this cannot tell apart is a plugin adding one in their
// name, or an app holding their token: nothing on the reaction says so.
func (g *gateway) onReaction(ctx context.Context, r mattermost.Reaction) {
	g.approvals.answerReaction(ctx, r)
}

package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/gatewayd/internal/mattermost"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// chats runs the turns: one after another within a session, sessions side
// by side, so a thread's messages reach loopd in the order they were posted.
type chats struct {
	g      *gateway
	mu     sync.Mutex
	queues map[string][]mattermost.Post // by session; present while its worker runs
	wg     sync.WaitGroup
}

func newChats(g *gateway) *chats {
	return &chats{g: g, queues: map[string][]mattermost.Post{}}
}

func (c *chats) wait() { c.wg.Wait() }

// enqueue queues a post for its thread's session.
func (c *chats) enqueue(ctx context.Context, p mattermost.Post) {
	session, err := sessionFor(p.ThreadRoot())
	if err != nil {
		c.g.log.Printf("post %s: no session name for thread %s: %v", p.ID, p.ThreadRoot(), err)
		return
	}
	key := session.String()
	c.mu.Lock()
	q, running := c.queues[key]
	c.queues[key] = append(q, p)
	c.mu.Unlock()
	if !running {
		c.wg.Go(func() { c.drain(ctx, session) })
	}
}

// drain runs the session's queued turns until none is left.
func (c *chats) drain(ctx context.Context, session wire.SessionID) {
	key := session.String()
	for {
		c.mu.Lock()
		q := c.queues[key]
		if len(q) == 0 || ctx.Err() != nil {
			delete(c.queues, key)
			c.mu.Unlock()
			return
		}
		c.queues[key] = q[1:]
		c.mu.Unlock()
		c.g.turn(ctx, session, q[0])
	}
}

// sessionFor names the session of a thread: "mm-" and the root id,
// lowercased, keeping only what a session name may hold.
func sessionFor(root string) (wire.SessionID, error) {
	var b strings.Builder
	b.WriteString("mm-")
	for _, r := range strings.ToLower(root) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	name := b.String()
	return wire.ParseSessionID(name[:min(len(name), 64)])
}

// rootOfSession is the thread root a session name stands for, when it is
// one gatewayd makes from a Mattermost id.
func rootOfSession(s wire.SessionID) (string, bool) {
	root, ok := strings.CutPrefix(s.String(), "mm-")
	return root, ok && len(root) == 26
}

// turn sends one message to loopd and streams the reply into a post in the
// message's thread.
func (g *gateway) turn(ctx context.Context, session wire.SessionID, p mattermost.Post) {
	g.log.Printf("post %s from %s -> session %s", p.ID, p.UserID, session)
	r := &reply{channel: p.ChannelID, root: p.ThreadRoot()}
	if err := g.startReply(ctx, r); err != nil {
		g.log.Printf("post %s: cannot post a reply, so it is not sent to loopd: %v", p.ID, err)
		return
	}
	stop := g.streamEdits(ctx, r)
	done, err := g.chatSend(ctx, session, messageOf(p), r.apply)
	stop()
	if err != nil {
		g.log.Printf("session %s: the turn failed: %v", session, err)
	}
	g.finishReply(ctx, r, done, err)
}

// messageOf is the text loopd gets; attachments are not carried, and the
// model is told so rather than left to guess.
func messageOf(p mattermost.Post) string {
	if n := len(p.FileIDs); n > 0 {
		return p.Message + fmt.Sprintf("\n\n[%d attached file(s) not forwarded by gatewayd]", n)
	}
	return p.Message
}

// dialTries bounds how long a message waits for loopd to come up.
const dialTries = 6

// chatSend sends chat_send and feeds each chat_event to onEvent. A chat_send
// that reached loopd is never sent again: only the dial is retried.
func (g *gateway) chatSend(ctx context.Context, session wire.SessionID, content string, onEvent func(wire.Message) error) (wire.ChatDone, error) {
	var c *sock.Client
	bo := g.backoff()
	for try := 1; ; try++ {
		var err error
		if c, err = sock.Dial(g.loopSock); err == nil {
			break
		}
		if try == dialTries {
			return wire.ChatDone{}, fmt.Errorf("loopd is not reachable: %w", err)
		}
		if bo.Wait(ctx) != nil {
			return wire.ChatDone{}, ctx.Err()
		}
	}
	defer c.Close()
	msg, err := c.Call(ctx, wire.ChatSend{Session: &session, Content: content}, onEvent)
	if err != nil {
		return wire.ChatDone{}, err
	}
	done, ok := msg.(wire.ChatDone)
	if !ok {
		return wire.ChatDone{}, fmt.Errorf("loopd answered %s, not chat_done", wire.KindOf(msg))
	}
	return done, nil
}

// startReply posts the placeholder the reply will be streamed into.
func (g *gateway) startReply(ctx context.Context, r *reply) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	post, err := retry(ctx, g, "posting a reply", func() (mattermost.Post, error) {
		return g.mm.CreatePost(ctx, mattermost.Post{ChannelID: r.channel, RootID: r.root, Message: r.render()})
	})
	r.id = post.ID
	return err
}

// streamEdits edits the reply at most once per edit_interval while the turn
// runs; the returned func stops it and waits for an edit in flight.
func (g *gateway) streamEdits(ctx context.Context, r *reply) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(g.cfg.EditInterval.D())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if text, changed := r.take(); changed {
				if _, err := g.mm.PatchPost(ctx, r.id, text); err != nil && ctx.Err() == nil {
					g.log.Printf("editing reply %s: %v", r.id, err)
				}
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// finishReply writes the final reply: the text chat_done carried, split
// over more posts in the thread when one cannot hold it.
func (g *gateway) finishReply(ctx context.Context, r *reply, done wire.ChatDone, turnErr error) {
	r.finish(done.Content, turnErr)
	chunks := r.final()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := retry(ctx, g, "writing the final reply", func() (mattermost.Post, error) {
		return g.mm.PatchPost(ctx, r.id, chunks[0])
	}); err != nil {
		g.log.Printf("reply %s: the final text was not written: %v", r.id, err)
	}
	for _, chunk := range chunks[1:] {
		if _, err := retry(ctx, g, "posting the rest of a reply", func() (mattermost.Post, error) {
			return g.mm.CreatePost(ctx, mattermost.Post{ChannelID: r.channel, RootID: r.root, Message: chunk})
		}); err != nil {
			g.log.Printf("reply %s: the rest of the text was not posted: %v", r.id, err)
			return
		}
	}
}

// say posts a short note in a thread, in the background.
func (g *gateway) say(ctx context.Context, channel, root, text string) {
	g.work.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := retry(ctx, g, "posting a note", func() (mattermost.Post, error) {
			return g.mm.CreatePost(ctx, mattermost.Post{ChannelID: channel, RootID: root, Message: text})
		}); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Printf("a note in thread %s was not posted: %v", root, err)
		}
	})
}

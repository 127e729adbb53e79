package bxctl

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"time"

	"boxmaker/wire"
)

// A reply may name a handle ("handle:h3") where the model could not show
// its content; chat shows the owner that content below the reply, fetched
// from brokerd's admin socket with its label (DESIGN.md section 15). It
// is the owner's to read: the model never sees it.

// handleMention finds "handle:h<N>" in a reply.
var handleMention = regexp.MustCompile(`handle:(h[1-9][0-9]{0,8})\b`)

// maxShownHandles bounds the handles one reply expands, so that a reply
// that names a thousand costs a thousand nothing.
const maxShownHandles = 8

// mentionedHandles lists the distinct handle names content mentions, in
// order, at most maxShownHandles.
func mentionedHandles(content string) []string {
	var names []string
	for _, m := range handleMention.FindAllStringSubmatch(content, -1) {
		if !contains(names, m[1]) {
			names = append(names, m[1])
		}
		if len(names) == maxShownHandles {
			break
		}
	}
	return names
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// showHandles shows each handle the reply mentions; a handle brokerd does
// not have for the session, or cannot show, is a line saying so.
func (c *chatter) showHandles(ctx context.Context, session wire.SessionID, content string) {
	for _, name := range mentionedHandles(content) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := callAdmin(ctx, c.paths, wire.HandleShow{Session: session, Handle: name})
		cancel()
		r, ok := res.(wire.HandleShowResult)
		switch {
		case err != nil:
			c.view.activity(fmt.Sprintf("handle:%s: brokerd cannot show it: %v", name, err))
		case !ok || r.Ref == nil:
			c.view.activity(fmt.Sprintf("handle:%s: this session has no such handle", name))
		default:
			c.view.handle(*r.Ref, r.Content)
		}
	}
}

// writeHandle writes a handle's label line and its content, sanitized.
func writeHandle(w io.Writer, ref wire.HandleRef, content string) {
	fmt.Fprintf(w, "[handle %s]\n", handleLabel(ref))
	writeContent(w, content)
}

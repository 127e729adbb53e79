package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode"

	"boxmaker/roles/gatewayd/internal/mattermost"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// The witnessd-gatewayd pair (DESIGN.md section 14): witnessd hands over the
// last audit checkpoint of each hour, and gatewayd posts it to the owner's
// direct messages, a copy off the host that nobody on it can take back.
// The socket accepts checkpoint_post from witnessd's uids and nothing else;
// gatewayd does not check the signature (the owner's `audit verify` does),
// only that the post shows the note as it came.

// maxCheckpointNote bounds a note: a checkpoint is a few hundred bytes.
const maxCheckpointNote = 4096

// serveWitness serves the witnessd-gatewayd socket until ctx ends;
// allowPeer, when set, replaces the table's peer check (tests).
func (g *gateway) serveWitness(ctx context.Context, ln *net.UnixListener, allowPeer func(sock.Peer) bool) error {
	gate, err := sock.ServerFor("witnessd", "gatewayd", g.log)
	if err != nil {
		return err
	}
	gate.ReplacePeerCheck(allowPeer)
	if err := g.witnessKinds().Route(gate); err != nil {
		return err
	}
	g.log.Printf("serving %s", ln.Addr())
	return gate.Serve(ctx, ln)
}

// witnessKinds is what gateway.sock answers witnessd.
func (g *gateway) witnessKinds() sock.Kinds {
	return sock.Kinds{"checkpoint_post": func(hctx context.Context, _ sock.Peer, e wire.Envelope, reply sock.Replier) error {
		post, err := g.postCheckpoint(hctx, e.Msg.(wire.CheckpointPost))
		if err != nil {
			return err
		}
		return reply(wire.Envelope{Final: true, Msg: wire.CheckpointPosted{Post: post}})
	}}
}

// postCheckpoint posts one checkpoint to the owner's DM and returns the post.
func (g *gateway) postCheckpoint(ctx context.Context, req wire.CheckpointPost) (string, error) {
	if err := checkCheckpointPost(req); err != nil {
		return "", sock.Refusal{Code: wire.BadMessage, Detail: err.Error()}
	}
	select {
	case <-g.ready:
	case <-ctx.Done():
		return "", sock.ErrNoAnswer
	}
	dm := g.ownerDM()
	if dm == "" {
		return "", sock.Refusal{Code: wire.Internal, Detail: "no direct channel with the owner (the first of allow_users)"}
	}
	p, err := g.mm.CreatePost(ctx, mattermost.Post{ChannelID: dm, Message: checkpointText(req)})
	if err != nil {
		g.log.Printf("posting the audit checkpoint of seq %d: %v", req.Seq, err)
		return "", sock.Refusal{Code: wire.Internal, Detail: "the post failed: see gatewayd's log"}
	}
	g.log.Printf("posted the audit checkpoint of seq %d to the owner (post %s)", req.Seq, p.ID)
	return p.ID, nil
}

// checkCheckpointPost refuses a note gatewayd could not show as it is: one
// that would end its code block, or holds characters a post would hide.
func checkCheckpointPost(r wire.CheckpointPost) error {
	switch {
	case r.Note == "" || len(r.Note) > maxCheckpointNote:
		return fmt.Errorf("a checkpoint note has 1 to %d bytes, not %d", maxCheckpointNote, len(r.Note))
	case strings.Contains(r.Note, "`"):
		return errors.New("a checkpoint note has no backquote")
	case strings.ContainsFunc(r.Note, func(c rune) bool { return c != '\n' && (unicode.IsControl(c) || !unicode.IsPrint(c) && c != ' ') }):
		return errors.New("a checkpoint note holds a control or invisible character")
	}
	if lines := strings.SplitN(r.Note, "\n", 3); len(lines) < 3 || lines[1] != fmt.Sprint(r.Seq) {
		return fmt.Errorf("the note's size line is not seq %d", r.Seq)
	}
	return nil
}

// checkpointText is the post: what it is, then the note as signed and
// cosigned (the witness's copy carries brokerd's signature and its own).
func checkpointText(r wire.CheckpointPost) string {
	return fmt.Sprintf("**boxmaker audit checkpoint**, the last the witness took in the hour of %s: seq %d, tree root `%s` (hex), as the witness holds it.\n"+
		"Keep this post: `boxmaker audit verify` fails when the log no longer holds these records (docs/deploy.md).\n```\n%s```",
		r.Time.Time().UTC().Format("2006-01-02 15:00 UTC"), r.Seq, r.Hash, r.Note)
}

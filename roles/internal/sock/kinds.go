package sock

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"boxmaker/roles"
	"boxmaker/wire"
)

// Kinds is what a listener answers: each kind, with its handler, in one
// table, as OpenSSH's mon_table keeps a message's type and its handler in
// one row. The role table (roles.Pairs) says which kinds each socket lets
// through; Kinds says who answers them, and Route holds the two together.
type Kinds map[string]Handler

// FileKinds is Kinds for a socket whose frames each carry a descriptor
// (roles.FramesWithDescriptor): its rows are FileHandlers.
type FileKinds map[string]FileHandler

// Route sets s.Handle to answer each kind s accepts with its row of k,
// once it has checked that every kind s accepts has one: a kind the gate
// lets through that no handler serves is an error at start, not an
// internal error at run time. k may hold rows for kinds another socket of
// the same listener accepts (loopd serves two pairs from one table);
// CheckKinds says that no row is for a kind none of them accepts.
func (k Kinds) Route(s *Server) error {
	rows, err := rowsFor(s, k)
	if err != nil {
		return err
	}
	s.Handle = func(ctx context.Context, peer Peer, req wire.Envelope, reply Replier) error {
		return rows[wire.KindOf(req.Msg)](ctx, peer, req, reply) // the gate let only these through
	}
	return nil
}

// Route is Kinds.Route for a socket whose frames carry descriptors: it
// sets s.HandleFile.
func (k FileKinds) Route(s *Server) error {
	rows, err := rowsFor(s, k)
	if err != nil {
		return err
	}
	s.HandleFile = func(ctx context.Context, peer Peer, req wire.Envelope, f *os.File, reply Replier) error {
		return rows[wire.KindOf(req.Msg)](ctx, peer, req, f, reply) // the gate let only these through
	}
	return nil
}

// rowsFor is the rows of k for the kinds s accepts, or the error that
// names each accepted kind without one.
func rowsFor[H Handler | FileHandler](s *Server, k map[string]H) (map[string]H, error) {
	var missing []string
	rows := make(map[string]H, len(s.Accepts))
	for _, kind := range s.Accepts {
		if k[kind] == nil {
			missing = append(missing, kind)
		}
		rows[kind] = k[kind]
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s accepts %s, which nothing answers", s.Name, strings.Join(missing, ", "))
	}
	return rows, nil
}

// CheckKinds reports why k is not exactly what accepts lists, or nil:
// each kind accepted has a row, and each row is for a kind accepted. A
// listener's test calls it with what the role table lets through its
// sockets (Accepted), beside the check Route makes at start. k is a
// listener's Kinds, FileKinds, or, for an HTTP listener, its routes.
func CheckKinds[H any](accepts []string, k map[string]H) error {
	var problems []string
	for _, kind := range accepts {
		if _, ok := k[kind]; !ok {
			problems = append(problems, kind+" is accepted, and nothing answers it")
		}
	}
	for kind := range k {
		if !slices.Contains(accepts, kind) {
			problems = append(problems, kind+" has a row, and no socket accepts it")
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%s", strings.Join(slices.Compact(problems), "; "))
	}
	return nil
}

// Accepted lists the kinds the role table lets through the sockets in
// which clients dial listener: those of the pair with client, or, with
// client "", of all of them.
func Accepted(client, listener string) []string {
	var out []string
	for _, p := range roles.ListensOn(listener) {
		if client == "" || p.Client == client {
			out = append(out, p.Accepts...)
		}
	}
	return out
}
